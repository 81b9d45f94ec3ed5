package ceiling.spring.webflux;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ErrorDto;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.springframework.core.annotation.Order;
import org.springframework.core.io.buffer.DataBufferLimitException;
import org.springframework.http.MediaType;
import org.springframework.http.server.reactive.ServerHttpResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.server.MethodNotAllowedException;
import org.springframework.web.server.NotAcceptableStatusException;
import org.springframework.web.server.ResponseStatusException;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.ServerWebInputException;
import org.springframework.web.server.UnsupportedMediaTypeStatusException;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;

/**
 * Maps contract errors and WebFlux's own bad-input exceptions to the contract's
 * {@code {"error":"<code>","message":"..."}} body. One handler for both controller errors and
 * errors before a controller is chosen (unknown route, 405, 413 from {@link BodyLimitWebFilter}).
 * Runs before Spring Boot's default error handler (order -1); anything it does not recognise
 * (a database failure, say) is passed on to that one and becomes a 500.
 */
@Component
@Order(-2)
public class ApiErrorHandler implements WebExceptionHandler {
    private final ObjectMapper json;

    public ApiErrorHandler(ObjectMapper json) {
        this.json = json;
    }

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable ex) {
        ApiException error = toApiException(ex);
        ServerHttpResponse response = exchange.getResponse();
        if (error == null || response.isCommitted()) {
            return Mono.error(ex);
        }
        byte[] body;
        try {
            body = json.writeValueAsBytes(error.body());
        } catch (JsonProcessingException e) {
            return Mono.error(e);
        }
        response.setRawStatusCode(error.status());
        response.getHeaders().setContentType(MediaType.APPLICATION_JSON);
        response.getHeaders().setContentLength(body.length);
        return response.writeWith(Mono.just(response.bufferFactory().wrap(body)));
    }

    static ApiException toApiException(Throwable ex) {
        if (ex instanceof ApiException api) {
            return api;
        }
        if (hasCause(ex, DataBufferLimitException.class)) {
            return ApiException.payloadTooLarge();
        }
        if (ex instanceof UnsupportedMediaTypeStatusException e) {
            return ApiException.unsupportedMediaType("Content-Type must be application/json, got " + e.getContentType());
        }
        if (ex instanceof ServerWebInputException e) {
            // Malformed JSON, wrong-typed field, missing body or parameter.
            Throwable cause = e.getMostSpecificCause();
            return ApiException.badRequest("bad request: " + firstLine(cause != null ? cause.getMessage() : e.getReason()));
        }
        if (ex instanceof MethodNotAllowedException e) {
            return new ApiException(405, "method_not_allowed", "method " + e.getHttpMethod() + " is not supported here");
        }
        if (ex instanceof NotAcceptableStatusException) {
            return new ApiException(406, "not_acceptable", "responses are application/json");
        }
        if (ex instanceof ResponseStatusException e) {
            // Other framework 4xx (unknown route, a 415 raised by the form reader, ...).
            return switch (e.getStatusCode().value()) {
                case 400 -> ApiException.badRequest(firstLine(e.getReason()));
                case 404 -> ApiException.notFound("no such route");
                case 413 -> ApiException.payloadTooLarge();
                case 415 -> ApiException.unsupportedMediaType("Content-Type must be application/json");
                default -> null;
            };
        }
        return null;
    }

    private static boolean hasCause(Throwable ex, Class<? extends Throwable> type) {
        for (Throwable t = ex; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
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
