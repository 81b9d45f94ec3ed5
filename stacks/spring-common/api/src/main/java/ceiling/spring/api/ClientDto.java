package ceiling.spring.api;

/** {@code {"id":<int>,"balance":<int>}} (bank, source 001 made sound). */
public record ClientDto(long id, long balance) {}
