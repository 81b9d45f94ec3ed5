package ceiling.helidon;

import io.helidon.http.Status;

/**
 * An answer other than success, with its HTTP status and the contract's error code. No stack trace:
 * these are ordinary outcomes (bad input, 404, 409), thrown on the request path and turned into
 * {@code {"error","message"}} by the routing's error handler (Main).
 */
final class ApiException extends RuntimeException {
    final Status status;
    final String code;

    ApiException(Status status, String code, String message) {
        super(message, null, false, false);
        this.status = status;
        this.code = code;
    }

    static ApiException badRequest(String message) {
        return new ApiException(Status.BAD_REQUEST_400, "bad_request", message);
    }

    static ApiException notFound(String message) {
        return new ApiException(Status.NOT_FOUND_404, "not_found", message);
    }

    static ApiException conflict(String message) {
        return new ApiException(Status.CONFLICT_409, "conflict", message);
    }

    static ApiException unsupportedMediaType(String message) {
        return new ApiException(Status.create(415), "unsupported_media_type", message);
    }

    static ApiException payloadTooLarge() {
        return new ApiException(Status.create(413), "payload_too_large",
                                "request body is larger than " + Http.MAX_BODY_BYTES + " bytes");
    }
}
