package ceiling.helidon;

import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * Every input rule of contract/API.md as plain functions. Each failure is an ApiException → 400
 * bad_request.
 */
final class Inputs {
    /** The most ids GET /status?ids= takes. */
    static final int MAX_BATCH_IDS = 50;
    static final int DEFAULT_ORDERS_LIMIT = 10;
    static final int MAX_ORDERS_LIMIT = 1000;
    /** The contract's upper bound on a balance (cents): 0 ≤ balance ≤ 2^62. */
    static final long MAX_BALANCE = 1L << 62;

    private Inputs() {
    }

    /**
     * A UUID in the canonical 8-4-4-4-12 hex form, either case; anything else (UUID.fromString's
     * lenient {@code 1-1-1-1-1}, braces, no dashes, 37 characters) is null.
     */
    static UUID parseUuid(String s) {
        if (s == null || s.length() != 36
                || s.charAt(8) != '-' || s.charAt(13) != '-' || s.charAt(18) != '-' || s.charAt(23) != '-') {
            return null;
        }
        long msb = 0;
        long lsb = 0;
        int n = 0;
        for (int i = 0; i < 36; i++) {
            if (i == 8 || i == 13 || i == 18 || i == 23) {
                continue;
            }
            char c = s.charAt(i);
            int d = c < 0x80 ? Character.digit(c, 16) : -1;
            if (d < 0) {
                return null;
            }
            if (n < 16) {
                msb = (msb << 4) | d;
            } else {
                lsb = (lsb << 4) | d;
            }
            n++;
        }
        return new UUID(msb, lsb);
    }

    static UUID requireUuid(String s) {
        UUID id = parseUuid(s);
        if (id == null) {
            throw ApiException.badRequest("\"" + s + "\" is not a UUID (want the canonical 8-4-4-4-12 hex form)");
        }
        return id;
    }

    /**
     * The ids of GET /status?ids=a,b,…: all {@code ids} parameters joined by commas, 1…50 items
     * counted before de-duplication, each a canonical UUID (an empty item is a bad UUID).
     */
    static List<UUID> parseStatusIds(List<String> values) {
        String raw = values == null ? "" : String.join(",", values);
        if (raw.isEmpty()) {
            throw ApiException.badRequest("ids: give 1 to " + MAX_BATCH_IDS + " comma-separated UUIDs");
        }
        String[] parts = raw.split(",", -1);
        if (parts.length > MAX_BATCH_IDS) {
            throw ApiException.badRequest("ids: " + parts.length + " ids given, at most " + MAX_BATCH_IDS + " allowed");
        }
        List<UUID> ids = new ArrayList<>(parts.length);
        for (String p : parts) {
            ids.add(requireUuid(p));
        }
        return ids;
    }

    /** A client id in the path: a decimal 64-bit integer (one that does not exist is a 404 later). */
    static long parseClientId(String s) {
        if (s == null || !isDecimal(s)) {
            throw ApiException.badRequest("\"" + s + "\" is not a client id (want a decimal 64-bit integer)");
        }
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            throw ApiException.badRequest("\"" + s + "\" is out of the 64-bit range");
        }
    }

    /** ?limit= of GET /orders: absent → 10, otherwise an integer in 1…1000 (empty is 400). */
    static int parseLimit(List<String> values) {
        if (values == null || values.isEmpty()) {
            return DEFAULT_ORDERS_LIMIT;
        }
        String v = values.get(0);
        int n = -1;
        if (isDecimal(v) && v.length() <= 5) {
            n = Integer.parseInt(v);
        }
        if (n < 1 || n > MAX_ORDERS_LIMIT) {
            throw ApiException.badRequest("limit: \"" + v + "\" is not an integer in 1…" + MAX_ORDERS_LIMIT);
        }
        return n;
    }

    /** {@code -?[0-9]+} */
    private static boolean isDecimal(String s) {
        int start = s.startsWith("-") ? 1 : 0;
        if (s.length() == start) {
            return false;
        }
        for (int i = start; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                return false;
            }
        }
        return true;
    }

    // ---- JSON body fields ---------------------------------------------------------------------

    /**
     * A required integer field: a JSON number written as an integer (Jackson's parser already
     * refuses leading zeros; {@code 1.5} and {@code 1e3} are floating-point nodes) that fits a long.
     * {@code "1"}, {@code true}, {@code null}, arrays and objects are 400, as is a missing field.
     */
    static long requireLong(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            throw ApiException.badRequest("field \"" + field + "\" is required");
        }
        if (!v.isIntegralNumber()) {
            throw ApiException.badRequest("field \"" + field + "\": want an integer, got JSON " + abbreviate(v));
        }
        if (!v.canConvertToLong()) {
            throw ApiException.badRequest("field \"" + field + "\": " + abbreviate(v) + " is out of range");
        }
        return v.longValue();
    }

    /** A required string field. */
    static String requireString(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            throw ApiException.badRequest("field \"" + field + "\" is required");
        }
        if (!v.isTextual()) {
            throw ApiException.badRequest("field \"" + field + "\": want a string, got JSON " + abbreviate(v));
        }
        return v.textValue();
    }

    static short requireSmallint(String field, long v) {
        if (v < Short.MIN_VALUE || v > Short.MAX_VALUE) {
            throw ApiException.badRequest("field \"" + field + "\": " + v + " is outside smallint ("
                                                  + Short.MIN_VALUE + "…" + Short.MAX_VALUE + ")");
        }
        return (short) v;
    }

    private static String abbreviate(JsonNode v) {
        String s = v.toString();
        return s.length() > 50 ? s.substring(0, 50) + "…" : s;
    }

    // ---- output -------------------------------------------------------------------------------

    /**
     * RFC 3339 in UTC with {@code Z}; Instant prints 0, 3 or 6 fraction digits for what timestamptz
     * stores (microseconds are kept).
     */
    static String formatTime(OffsetDateTime t) {
        return t.toInstant().toString();
    }
}
