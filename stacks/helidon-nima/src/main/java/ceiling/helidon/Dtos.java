package ceiling.helidon;

import com.fasterxml.jackson.annotation.JsonPropertyOrder;

/** The JSON bodies, written by Helidon's Jackson media support (field names as in the contract). */
final class Dtos {
    private Dtos() {
    }

    /** {@code {"error":"<code>","message":"…"}} */
    @JsonPropertyOrder({"error", "message"})
    record ErrorBody(String error, String message) {
    }

    @JsonPropertyOrder({"id", "status", "updatedAt"})
    record StatusDto(String id, int status, String updatedAt) {
    }

    @JsonPropertyOrder({"id", "balance"})
    record ClientDto(long id, long balance) {
    }

    @JsonPropertyOrder({"from", "to", "amount"})
    record TransferDto(long from, long to, long amount) {
    }

    @JsonPropertyOrder({"id", "customer", "item", "quantity", "priceCents", "createdAt"})
    record OrderDto(long id, String customer, String item, int quantity, long priceCents, String createdAt) {
    }

    /** Source 002's Níma row: every field but {@code id} (ORDERS_ID=omit; not the contract). */
    @JsonPropertyOrder({"customer", "item", "quantity", "priceCents", "createdAt"})
    record OrderNoIdDto(String customer, String item, int quantity, long priceCents, String createdAt) {
    }

    /** Exactly {@code {"ok":true,"message":"OK"}} (source 004 compares bytes). */
    @JsonPropertyOrder({"ok", "message"})
    record PingDto(boolean ok, String message) {
    }

    record TimeDto(long serverTime) {
    }

    record HealthDto(String status) {
    }
}
