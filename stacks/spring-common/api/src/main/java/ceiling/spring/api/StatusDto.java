package ceiling.spring.api;

import java.time.Instant;
import java.util.UUID;

/** {@code {"id":"<uuid>","status":<int>,"updatedAt":"<rfc3339>"}} (source 000's DTO). */
public record StatusDto(UUID id, int status, Instant updatedAt) {}
