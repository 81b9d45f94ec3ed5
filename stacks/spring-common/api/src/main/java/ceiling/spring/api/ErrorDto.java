package ceiling.spring.api;

/** {@code {"error":"<code>","message":"<human text>"}}, the contract's error body. */
public record ErrorDto(String error, String message) {}
