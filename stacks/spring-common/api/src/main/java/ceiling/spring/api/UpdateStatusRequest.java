package ceiling.spring.api;

/** Body of {@code PUT /status/{id}}. */
public record UpdateStatusRequest(Integer status) {}
