package ceiling.spring.api;

/**
 * A contract error: HTTP status, contract error code and a message. Thrown by input parsing and
 * by repositories (404 unknown id, 409 conflict), mapped to {@link ErrorDto} by each web layer.
 * These are expected outcomes (a 404 is part of the workload), so no stack trace is captured.
 */
public class ApiException extends RuntimeException {
    private final int status;
    private final String code;

    public ApiException(int status, String code, String message) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
    }

    public static ApiException badRequest(String message) {
        return new ApiException(400, "bad_request", message);
    }

    public static ApiException notFound(String message) {
        return new ApiException(404, "not_found", message);
    }

    public static ApiException conflict(String message) {
        return new ApiException(409, "conflict", message);
    }

    public static ApiException unsupportedMediaType(String message) {
        return new ApiException(415, "unsupported_media_type", message);
    }

    public static ApiException payloadTooLarge() {
        return new ApiException(413, "payload_too_large", "request body is larger than " + Inputs.MAX_BODY_BYTES + " bytes");
    }

    public int status() {
        return status;
    }

    public String code() {
        return code;
    }

    public ErrorDto body() {
        return new ErrorDto(code, getMessage());
    }
}
