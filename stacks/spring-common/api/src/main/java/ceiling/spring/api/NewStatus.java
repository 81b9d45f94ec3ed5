package ceiling.spring.api;

import java.util.UUID;

/** A validated {@code POST /status} body. */
public record NewStatus(UUID id, short status) {}
