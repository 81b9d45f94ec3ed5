package ceiling.spring.api;

/** {@code {"from":<id>,"to":<id>,"amount":<int>}}: a validated transfer, and the response to it. */
public record TransferDto(long from, long to, long amount) {}
