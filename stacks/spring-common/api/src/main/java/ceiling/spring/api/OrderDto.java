package ceiling.spring.api;

import java.time.Instant;

/** One row of {@code GET /orders}; every field is present (source 002's Nima dropped {@code id}). */
public record OrderDto(long id, String customer, String item, int quantity, long priceCents, Instant createdAt) {}
