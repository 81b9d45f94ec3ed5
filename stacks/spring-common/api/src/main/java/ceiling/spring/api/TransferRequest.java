package ceiling.spring.api;

/** Body of {@code POST /transfers}; validated into a {@link TransferDto} by {@link Inputs#transfer}. */
public record TransferRequest(Long from, Long to, Long amount) {}
