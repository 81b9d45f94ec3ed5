package ceiling.ktor

import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonPrimitive
import java.time.OffsetDateTime
import java.util.UUID

/*
 * Every input rule of contract/API.md, as plain functions (unit-tested without a server). Each
 * failure is an ApiException → 400 bad_request, with go-pgx's wording where it has one.
 */

/** The most ids GET /status?ids= takes. */
const val MAX_BATCH_IDS = 50
const val DEFAULT_ORDERS_LIMIT = 10
const val MAX_ORDERS_LIMIT = 1000

/** The contract's upper bound on a balance (cents): 0 ≤ balance ≤ 2^62. */
const val MAX_BALANCE = 1L shl 62

/**
 * A UUID in the canonical 8-4-4-4-12 hex form, either case; anything else (java.util.UUID's
 * lenient `1-1-1-1-1`, braces, no dashes, 37 characters) is null.
 */
fun parseUuid(s: String): UUID? {
    if (s.length != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-') return null
    var msb = 0L
    var lsb = 0L
    var n = 0
    for (i in 0 until 36) {
        if (i == 8 || i == 13 || i == 18 || i == 23) continue
        val d = Character.digit(s[i], 16)
        if (d < 0 || s[i].code > 0x7f) return null
        if (n < 16) msb = (msb shl 4) or d.toLong() else lsb = (lsb shl 4) or d.toLong()
        n++
    }
    return UUID(msb, lsb)
}

fun requireUuid(s: String?): UUID =
    s?.let(::parseUuid) ?: throw ApiException.badRequest("\"$s\" is not a UUID (want the canonical 8-4-4-4-12 hex form)")

/**
 * The ids of GET /status?ids=a,b,…: all `ids` parameters joined by commas, 1…50 items counted
 * before de-duplication, each a canonical UUID (an empty item is a bad UUID).
 */
fun parseStatusIds(values: List<String>?): List<UUID> {
    val raw = values.orEmpty().joinToString(",")
    if (raw.isEmpty()) throw ApiException.badRequest("ids: give 1 to $MAX_BATCH_IDS comma-separated UUIDs")
    val parts = raw.split(',')
    if (parts.size > MAX_BATCH_IDS) {
        throw ApiException.badRequest("ids: ${parts.size} ids given, at most $MAX_BATCH_IDS allowed")
    }
    return parts.map(::requireUuid)
}

/** A client id in the path: a decimal 64-bit integer (one that does not exist is a 404 later). */
fun parseClientId(s: String?): Long =
    s?.toLongOrNull() ?: throw ApiException.badRequest("\"$s\" is not a client id (want a decimal 64-bit integer)")

/** ?limit= of GET /orders: absent → 10, otherwise an integer in 1…1000 (empty is 400). */
fun parseLimit(values: List<String>?): Int {
    val v = values?.firstOrNull() ?: return DEFAULT_ORDERS_LIMIT
    val n = v.toIntOrNull()
    if (n == null || n < 1 || n > MAX_ORDERS_LIMIT) {
        throw ApiException.badRequest("limit: \"$v\" is not an integer in 1…$MAX_ORDERS_LIMIT")
    }
    return n
}

// ---- JSON body fields ----------------------------------------------------------------------

/**
 * A required integer field: a JSON number written as an integer (no fraction, no exponent, no
 * quotes, no leading zeros) that fits a Long. kotlinx accepts unquoted literals when it builds a
 * JsonElement, so the literal is checked here character by character.
 */
fun JsonElement?.requireLong(field: String): Long {
    val p = primitiveOrThrow(field)
    if (p.isString || !isJsonInteger(p.content)) {
        throw ApiException.badRequest("field \"$field\": want an integer, got JSON $p")
    }
    return p.content.toLongOrNull()
        ?: throw ApiException.badRequest("field \"$field\": ${p.content} is out of range")
}

/** A required string field. */
fun JsonElement?.requireString(field: String): String {
    val p = primitiveOrThrow(field)
    if (!p.isString) throw ApiException.badRequest("field \"$field\": want a string, got JSON $p")
    return p.content
}

private fun JsonElement?.primitiveOrThrow(field: String): JsonPrimitive {
    if (this == null || this is JsonNull) throw ApiException.badRequest("field \"$field\" is required")
    return this as? JsonPrimitive
        ?: throw ApiException.badRequest("field \"$field\": want a scalar, got JSON ${this.toString().take(50)}")
}

/** `-?(0|[1-9][0-9]*)`, the JSON grammar of an integer. */
fun isJsonInteger(s: String): Boolean {
    val start = if (s.startsWith('-')) 1 else 0
    if (s.length == start) return false
    if (s[start] == '0') return s.length == start + 1
    for (i in start until s.length) if (s[i] !in '0'..'9') return false
    return true
}

fun requireSmallint(field: String, v: Long): Short {
    if (v < Short.MIN_VALUE || v > Short.MAX_VALUE) {
        throw ApiException.badRequest("field \"$field\": $v is outside smallint (${Short.MIN_VALUE}…${Short.MAX_VALUE})")
    }
    return v.toShort()
}

// ---- output --------------------------------------------------------------------------------

/** RFC 3339 in UTC with `Z`; Instant prints 0, 3 or 6 fraction digits for what timestamptz stores. */
fun formatTime(t: OffsetDateTime): String = t.toInstant().toString()
