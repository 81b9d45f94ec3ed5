package ceiling.spring.mvc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ErrorDto;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.HttpMediaTypeNotAcceptableException;
import org.springframework.web.HttpMediaTypeNotSupportedException;
import org.springframework.web.HttpRequestMethodNotSupportedException;
import org.springframework.web.bind.ServletRequestBindingException;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;
import org.springframework.web.method.annotation.MethodArgumentTypeMismatchException;
import org.springframework.web.servlet.NoHandlerFoundException;
import org.springframework.web.servlet.resource.NoResourceFoundException;

/**
 * Maps contract errors and Spring MVC's own bad-input exceptions to the contract's
 * {@code {"error":"<code>","message":"..."}} body. Bad input never becomes a 5xx.
 */
@RestControllerAdvice
public class ApiErrorAdvice {

    @ExceptionHandler(ApiException.class)
    public ResponseEntity<ErrorDto> api(ApiException e) {
        return ResponseEntity.status(e.status()).body(e.body());
    }

    /** Malformed JSON, wrong-typed field, number out of range for its type, missing body. */
    @ExceptionHandler(HttpMessageNotReadableException.class)
    public ResponseEntity<ErrorDto> unreadable(HttpMessageNotReadableException e) {
        return error(400, "bad_request", "request body is not the expected JSON: " + firstLine(e.getMostSpecificCause().getMessage()));
    }

    @ExceptionHandler({ServletRequestBindingException.class, MethodArgumentTypeMismatchException.class})
    public ResponseEntity<ErrorDto> badParameter(Exception e) {
        return error(400, "bad_request", firstLine(e.getMessage()));
    }

    @ExceptionHandler(HttpMediaTypeNotSupportedException.class)
    public ResponseEntity<ErrorDto> unsupportedMediaType(HttpMediaTypeNotSupportedException e) {
        return error(415, "unsupported_media_type", "Content-Type must be application/json, got " + e.getContentType());
    }

    @ExceptionHandler({NoResourceFoundException.class, NoHandlerFoundException.class})
    public ResponseEntity<ErrorDto> noRoute(Exception e) {
        return error(404, "not_found", "no such route");
    }

    @ExceptionHandler(HttpRequestMethodNotSupportedException.class)
    public ResponseEntity<ErrorDto> methodNotAllowed(HttpRequestMethodNotSupportedException e) {
        return error(405, "method_not_allowed", firstLine(e.getMessage()));
    }

    @ExceptionHandler(HttpMediaTypeNotAcceptableException.class)
    public ResponseEntity<ErrorDto> notAcceptable(HttpMediaTypeNotAcceptableException e) {
        return error(406, "not_acceptable", "responses are application/json");
    }

    private static ResponseEntity<ErrorDto> error(int status, String code, String message) {
        return ResponseEntity.status(status).body(new ErrorDto(code, message));
    }

    private static String firstLine(String message) {
        if (message == null) {
            return "bad request";
        }
        int nl = message.indexOf('\n');
        String line = nl < 0 ? message : message.substring(0, nl);
        return line.length() <= 200 ? line : line.substring(0, 200) + "...";
    }
}
