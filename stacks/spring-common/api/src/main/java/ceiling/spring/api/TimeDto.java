package ceiling.spring.api;

import java.time.Instant;

/** {@code {"serverTime":<unix seconds>}} (source 004). */
public record TimeDto(long serverTime) {
    public static TimeDto now() {
        return new TimeDto(Instant.now().getEpochSecond());
    }
}
