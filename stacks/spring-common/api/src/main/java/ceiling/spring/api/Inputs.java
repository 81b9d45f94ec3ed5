package ceiling.spring.api;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.regex.Pattern;

/**
 * Input rules of contract/API.md, shared by all four stacks so that they reject exactly the same
 * requests. Everything here throws {@link ApiException#badRequest} (400) on bad input.
 */
public final class Inputs {
    /** Request bodies above this are answered 413. */
    public static final int MAX_BODY_BYTES = 64 * 1024;
    /** {@code GET /status?ids=} takes 1..50 ids. */
    public static final int MAX_IDS = 50;
    /** {@code GET /orders?limit=N}: N in 1..1000, default 10. */
    public static final int MAX_LIMIT = 1000;
    public static final int DEFAULT_LIMIT = 10;
    /** {@code 0 <= balance <= 2^62}. */
    public static final long MAX_BALANCE = 1L << 62;

    /** Canonical 8-4-4-4-12 hex, either case ({@link UUID#fromString} alone also takes "1-2-3-4-5"). */
    private static final Pattern UUID_FORM =
            Pattern.compile("[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}");
    private static final Pattern ID_FORM = Pattern.compile("[0-9]{1,19}");
    private static final Pattern LIMIT_FORM = Pattern.compile("[0-9]{1,9}");

    private Inputs() {}

    public static UUID uuid(String text) {
        if (text == null || !UUID_FORM.matcher(text).matches()) {
            throw ApiException.badRequest("not a UUID: " + abbreviate(text));
        }
        return UUID.fromString(text);
    }

    /** {@code ids=a,b,...}: 1..50 UUIDs; blanks around commas are ignored, an empty item is a bad UUID. */
    public static List<UUID> ids(String csv) {
        if (csv == null || csv.isBlank()) {
            throw ApiException.badRequest("ids: give 1 to " + MAX_IDS + " comma-separated UUIDs");
        }
        String[] parts = csv.split(",", -1);
        if (parts.length > MAX_IDS) {
            throw ApiException.badRequest("ids: at most " + MAX_IDS + " ids, got " + parts.length);
        }
        List<UUID> ids = new ArrayList<>(parts.length);
        for (String part : parts) {
            ids.add(uuid(part.strip()));
        }
        return ids;
    }

    /** A client id in a path: a non-negative 64-bit integer. */
    public static long clientId(String text) {
        if (text != null && ID_FORM.matcher(text).matches()) {
            try {
                return Long.parseLong(text);
            } catch (NumberFormatException tooBig) {
                // falls through to 400
            }
        }
        throw ApiException.badRequest("not a client id: " + abbreviate(text));
    }

    public static int limit(String text) {
        if (text == null) {
            return DEFAULT_LIMIT;
        }
        if (LIMIT_FORM.matcher(text).matches()) {
            int limit = Integer.parseInt(text);
            if (limit >= 1 && limit <= MAX_LIMIT) {
                return limit;
            }
        }
        throw ApiException.badRequest("limit must be an integer from 1 to " + MAX_LIMIT + ", got " + abbreviate(text));
    }

    public static NewStatus newStatus(CreateStatusRequest body) {
        if (body == null) {
            throw ApiException.badRequest("body must be a JSON object {\"id\":\"<uuid>\",\"status\":<int>}");
        }
        if (body.id() == null) {
            throw ApiException.badRequest("missing field: id");
        }
        return new NewStatus(uuid(body.id()), status(body.status()));
    }

    public static short status(UpdateStatusRequest body) {
        if (body == null) {
            throw ApiException.badRequest("body must be a JSON object {\"status\":<int>}");
        }
        return status(body.status());
    }

    private static short status(Integer status) {
        if (status == null) {
            throw ApiException.badRequest("missing field: status");
        }
        if (status < Short.MIN_VALUE || status > Short.MAX_VALUE) {
            throw ApiException.badRequest("status must be in -32768..32767 (smallint), got " + status);
        }
        return status.shortValue();
    }

    public static long openingBalance(CreateClientRequest body) {
        if (body == null || body.balance() == null) {
            throw ApiException.badRequest("missing field: balance");
        }
        long balance = body.balance();
        if (balance < 0 || balance > MAX_BALANCE) {
            throw ApiException.badRequest("balance must be in 0..2^62, got " + balance);
        }
        return balance;
    }

    public static TransferDto transfer(TransferRequest body) {
        if (body == null) {
            throw ApiException.badRequest("body must be a JSON object {\"from\":<id>,\"to\":<id>,\"amount\":<int>}");
        }
        if (body.from() == null || body.to() == null || body.amount() == null) {
            throw ApiException.badRequest("missing field: " + (body.from() == null ? "from" : body.to() == null ? "to" : "amount"));
        }
        if (body.amount() <= 0) {
            throw ApiException.badRequest("amount must be > 0, got " + body.amount());
        }
        if (body.from().equals(body.to())) {
            throw ApiException.badRequest("from and to must differ");
        }
        return new TransferDto(body.from(), body.to(), body.amount());
    }

    private static String abbreviate(String text) {
        if (text == null) {
            return "(missing)";
        }
        return text.length() <= 64 ? '"' + text + '"' : '"' + text.substring(0, 64) + "...\"";
    }
}
