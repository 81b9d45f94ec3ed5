package ceiling.spring.api;

/** Body of {@code POST /clients}. */
public record CreateClientRequest(Long balance) {}
