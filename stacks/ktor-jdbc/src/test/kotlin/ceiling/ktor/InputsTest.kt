package ceiling.ktor

import io.ktor.http.HttpStatusCode
import java.time.OffsetDateTime
import java.util.UUID
import kotlin.test.Test
import kotlin.test.assertEquals
import kotlin.test.assertFailsWith
import kotlin.test.assertFalse
import kotlin.test.assertNull
import kotlin.test.assertTrue

class InputsTest {
    private fun bad(block: () -> Any?) {
        val e = assertFailsWith<ApiException> { block() }
        assertEquals(HttpStatusCode.BadRequest, e.status)
        assertEquals("bad_request", e.code)
    }

    @Test
    fun `canonical UUIDs only, either case, returned lower-case`() {
        val u = "000016a5-3c0e-4307-4168-ff8fc74bd819"
        assertEquals(UUID.fromString(u), parseUuid(u))
        assertEquals(u, parseUuid(u.uppercase()).toString())
        for (s in listOf(
            "", "not-a-uuid", "1-1-1-1-1", "000016a53c0e43074168ff8fc74bd819", "{$u}", "${u}0",
            "g00016a5-3c0e-4307-4168-ff8fc74bd819", "000016a5-3c0e-4307-4168+ff8fc74bd819",
            "000016a5-3c0e-4307-4168-ff8fc74bd81\u0669", // an Arabic-Indic digit: not hex here
        )) {
            assertNull(parseUuid(s), s)
        }
        bad { requireUuid("nope") }
        bad { requireUuid(null) }
    }

    @Test
    fun `status ids - 1 to 50, joined, every item a UUID`() {
        val u = "000016a5-3c0e-4307-4168-ff8fc74bd819"
        assertEquals(2, parseStatusIds(listOf("$u,$u")).size)
        assertEquals(3, parseStatusIds(listOf(u, "$u,$u")).size)
        assertEquals(50, parseStatusIds(listOf(List(50) { u }.joinToString(","))).size)
        bad { parseStatusIds(listOf(List(51) { u }.joinToString(","))) }
        bad { parseStatusIds(null) }
        bad { parseStatusIds(listOf("")) }
        bad { parseStatusIds(listOf("$u,")) }
        bad { parseStatusIds(listOf("$u,nope")) }
        bad { parseStatusIds(listOf("$u, $u")) }
    }

    @Test
    fun `client ids and limits`() {
        assertEquals(1L, parseClientId("1"))
        assertEquals(-5L, parseClientId("-5"))
        bad { parseClientId("abc") }
        bad { parseClientId("1.5") }
        bad { parseClientId("99999999999999999999") }
        assertEquals(10, parseLimit(null))
        assertEquals(1, parseLimit(listOf("1")))
        assertEquals(1000, parseLimit(listOf("1000", "5")))
        for (s in listOf("0", "1001", "-1", "abc", "", "1e2", "1.0")) bad { parseLimit(listOf(s)) }
    }

    private fun status(json: String): Long = UpdateStatusRequest(parseJsonObject(json)).status.requireLong("status")

    @Test
    fun `integer fields are strict`() {
        assertEquals(7L, status("""{"status":7}"""))
        assertEquals(-32768L, status("""{"status":-32768,"extra":[1,{"a":null}]}"""))
        assertEquals(0L, status("""{"status":-0}"""))
        for (s in listOf("1.5", "\"1\"", "true", "null", "1e3", "01", "-", "abc", "[1]", "{}", "99999999999999999999")) {
            bad { status("""{"status":$s}""") }
        }
        bad { status("{}") }
        assertTrue(isJsonInteger("0"))
        assertTrue(isJsonInteger("-10"))
        assertFalse(isJsonInteger("-"))
        assertFalse(isJsonInteger("+1"))
        assertFalse(isJsonInteger("00"))
    }

    @Test
    fun `malformed bodies are 400`() {
        for (s in listOf(
            "", "null", "[1,2]", "\"x\"", "5", "{\"status\":1", "{\"status\":1} trailing", "{\"status\":1,}",
            "{\"id\":\"x\" \"status\":1}", "{\"status\":1 \"id\":\"x\"}", "{,\"status\":1}", "{status:1}",
            "{'status':1}", "{\"status\":1,\"x\":foo}", "{\"status\":1,\"x\":[tru]}", "{\"status\":1,\"x\":01}",
            "{\"status\":1,\"x\":1.}", "{\"status\":1,\"x\":.5}", "{\"status\":1,\"x\":+1}",
        )) {
            bad { parseJsonObject(s) }
        }
        assertEquals(1L, status("""{"status":1,"x":[true,false,null,-1.5e+3,{"y":"z"}]}"""))
        val ok = "[".repeat(MAX_JSON_DEPTH - 1) + "]".repeat(MAX_JSON_DEPTH - 1)
        assertEquals(1L, status("""{"status":1,"x":$ok}"""))
        val deep = "[".repeat(30_000) + "]".repeat(30_000)
        bad { parseJsonObject("""{"status":1,"x":$deep}""") }
        assertEquals(3, jsonDepth("""{"a":"[[[[\"{{\\","b":[{}]}""".encodeToByteArray())) // escaped quote, escaped backslash
    }

    @Test
    fun `range rules`() {
        assertEquals(32767.toShort(), requireSmallint("status", 32767))
        bad { requireSmallint("status", 32768) }
        bad { requireSmallint("status", -32769) }
        assertEquals(MAX_BALANCE, CreateClientRequest(parseJsonObject("""{"balance":4611686018427387904}""")).validBalance())
        bad { CreateClientRequest(parseJsonObject("""{"balance":4611686018427387905}""")).validBalance() }
        bad { CreateClientRequest(parseJsonObject("""{"balance":-1}""")).validBalance() }
        bad { CreateClientRequest(parseJsonObject("""{"balance":"5"}""")).validBalance() }
    }

    @Test
    fun `transfer rules`() {
        fun t(s: String) = TransferRequest(parseJsonObject(s)).validate()
        assertEquals(TransferDto(1, 2, 100), t("""{"from":1,"to":2,"amount":100}"""))
        bad { t("""{"from":1,"to":1,"amount":1}""") }
        bad { t("""{"from":1,"to":2,"amount":0}""") }
        bad { t("""{"from":1,"to":2,"amount":-5}""") }
        bad { t("""{"from":1,"to":2}""") }
        bad { t("""{"from":"1","to":2,"amount":1}""") }
    }

    @Test
    fun `timestamps are RFC 3339 UTC with Z, at most microseconds`() {
        assertEquals("2025-01-01T00:00:01Z", formatTime(OffsetDateTime.parse("2025-01-01T00:00:01Z")))
        assertEquals("2025-01-01T00:00:01.123456Z", formatTime(OffsetDateTime.parse("2025-01-01T03:00:01.123456+03:00")))
        assertEquals("2025-01-01T00:00:01.120Z", formatTime(OffsetDateTime.parse("2025-01-01T00:00:01.12Z")))
    }

    @Test
    fun `config from the environment`() {
        val env = mapOf("HTTP_PORT" to "9000", "DB_POOL_SIZE" to "100", "WORKERS" to "4", "DB_PASSWORD" to "")
        val c = Config.fromEnv(env::get)
        assertEquals(9000, c.httpPort)
        assertEquals(100, c.poolSize)
        assertEquals(4, c.workers)
        assertEquals("127.0.0.1", c.dbHost)
        assertEquals("disable", c.dbSslMode)
        assertFailsWith<IllegalArgumentException> { Config.fromEnv(mapOf("DB_POOL_SIZE" to "0")::get) }
        assertFailsWith<IllegalArgumentException> { Config.fromEnv(mapOf("HTTP_PORT" to "x")::get) }
    }
}
