package ceiling.ktor

import io.ktor.http.ContentType
import io.ktor.http.HttpHeaders
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.ApplicationCallPipeline
import io.ktor.server.application.call
import io.ktor.server.response.respond
import io.ktor.http.HttpStatusCode
import io.ktor.server.request.ApplicationReceivePipeline
import io.ktor.server.request.contentLength
import io.ktor.server.request.receive
import io.ktor.utils.io.ByteReadChannel
import io.ktor.utils.io.readBuffer
import kotlinx.io.readByteArray
import kotlinx.coroutines.CancellationException
import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonArray
import kotlinx.serialization.json.JsonElement
import kotlinx.serialization.json.JsonNull
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.JsonPrimitive

/** The contract's request body limit: 64 KiB; larger is 413. */
const val MAX_BODY_BYTES = 64 * 1024

/**
 * The one Json instance, used by ContentNegotiation both ways (kotlinx's strict defaults: no
 * lenient keys or strings, no trailing commas, nothing after the value).
 *
 * Request bodies are received as a JsonObject, not as @Serializable classes: kotlinx's class
 * decoder accepts an object with a missing comma (`{"id":"…" "status":1}`), its tree reader does
 * not. The tree reader does accept any unquoted literal (`{"x": foo}`), so [requireStrictJson]
 * checks those against the JSON grammar, and the fields themselves are checked in Inputs.kt with
 * the contract's messages.
 */
val ApiJson = Json {
    encodeDefaults = true
}

/**
 * Caps every request body at [MAX_BODY_BYTES], also when it comes chunked (no Content-Length):
 * reads at most one byte more than the limit before anything converts it, and refuses JSON nested
 * deeper than [MAX_JSON_DEPTH] (kotlinx's tree reader recurses per array level, so 64 KiB of `[`
 * would overflow the stack: a 5xx for bad input). Bodies are small JSON objects, so buffering them
 * whole costs nothing.
 */
fun Application.limitRequestBodies() {
    receivePipeline.intercept(ApplicationReceivePipeline.Before) { body ->
        if (body is ByteReadChannel) {
            val bytes = body.readBuffer(MAX_BODY_BYTES + 1).readByteArray()
            if (bytes.size > MAX_BODY_BYTES) throw ApiException.payloadTooLarge()
            if (jsonDepth(bytes) > MAX_JSON_DEPTH) {
                throw ApiException.badRequest("malformed JSON body: nested deeper than $MAX_JSON_DEPTH levels")
            }
            proceedWith(ByteReadChannel(bytes))
        }
    }
}

const val MAX_JSON_DEPTH = 512

/** The deepest nesting of `[`/`{` outside strings (a lexical scan; the parser judges the rest). */
fun jsonDepth(bytes: ByteArray): Int {
    var depth = 0
    var max = 0
    var inString = false
    var escaped = false
    for (b in bytes) {
        val c = b.toInt().toChar()
        when {
            inString -> when {
                escaped -> escaped = false
                c == '\\' -> escaped = true
                c == '"' -> inString = false
            }
            c == '"' -> inString = true
            c == '[' || c == '{' -> if (++depth > max) max = depth
            c == ']' || c == '}' -> depth--
        }
    }
    return max
}

/**
 * Receives a JSON object request body through ContentNegotiation, in the contract's order:
 * Content-Type must be application/json (parameters such as charset allowed) → 415; then the size
 * → 413; then the syntax and shape → 400.
 */
suspend fun ApplicationCall.receiveJsonObject(): JsonObject {
    checkJsonBody()
    val body = try {
        receive<JsonElement>() // JsonElementSerializer: kotlinx's tree reader, strict about commas
    } catch (e: CancellationException) {
        throw e
    } catch (e: Exception) {
        throw generateSequence<Throwable>(e) { it.cause }.filterIsInstance<ApiException>().firstOrNull()
            ?: ApiException.badRequest("malformed JSON body: ${rootMessage(e)}")
    }
    return requireJsonObject(body)
}

/** What [receiveJsonObject] does to a body, for a string (tests). */
fun parseJsonObject(text: String): JsonObject = try {
    if (jsonDepth(text.encodeToByteArray()) > MAX_JSON_DEPTH) throw ApiException.badRequest("nested too deeply")
    requireJsonObject(ApiJson.decodeFromString<JsonElement>(text))
} catch (e: SerializationException) {
    throw ApiException.badRequest("malformed JSON body: ${rootMessage(e)}")
}

fun requireJsonObject(body: JsonElement): JsonObject {
    if (body !is JsonObject) throw ApiException.badRequest("request body must be a JSON object")
    requireStrictJson(body)
    return body
}

private val JSON_NUMBER = Regex("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")

/** Every unquoted literal in [root] is true, false, null or a JSON number (no recursion: bodies may nest deeply). */
fun requireStrictJson(root: JsonElement) {
    val todo = ArrayDeque<JsonElement>().apply { add(root) }
    while (todo.isNotEmpty()) {
        when (val e = todo.removeLast()) {
            is JsonObject -> todo.addAll(e.values)
            is JsonArray -> todo.addAll(e)
            is JsonNull -> Unit
            is JsonPrimitive -> if (!e.isString && e.content != "true" && e.content != "false" && !JSON_NUMBER.matches(e.content)) {
                throw ApiException.badRequest("malformed JSON body: invalid literal ${e.content.take(40)}")
            }
        }
    }
}

fun ApplicationCall.checkJsonBody() {
    val raw = request.headers[HttpHeaders.ContentType]
        ?: throw ApiException.unsupportedMediaType("Content-Type must be application/json")
    val type = try {
        ContentType.parse(raw).withoutParameters()
    } catch (e: Exception) {
        null
    }
    if (type != ContentType.Application.Json) {
        throw ApiException.unsupportedMediaType("Content-Type must be application/json, not \"$raw\"")
    }
    val length = request.contentLength()
    if (length != null && length > MAX_BODY_BYTES) throw ApiException.payloadTooLarge()
}

/** The innermost message of a failed conversion (kotlinx's parse error, not Ktor's wrappers). */
fun rootMessage(e: Throwable): String {
    var t = e
    while (t.cause != null && t.cause !== t) t = t.cause!!
    return (t.message ?: t.javaClass.simpleName).lineSequence().first().take(200)
}

/** All values of query parameter [name]; a query string that does not URL-decode is a 400. */
fun ApplicationCall.queryValues(name: String): List<String>? = try {
    request.queryParameters.getAll(name)
} catch (e: IllegalArgumentException) {
    throw ApiException.badRequest("malformed query string: ${e.message}")
}

/**
 * Decodes the query string before routing does: Netty's decoder throws IllegalArgumentException
 * on `%zz`, and routing reads the query parameters while it builds call.parameters, where that would
 * surface as a 500. Netty caches the decoded parameters, so this costs nothing extra. It answers
 * and finish()es the pipeline itself rather than throwing: an exception handled by StatusPages in
 * this phase would still let the later interceptors (routing) run.
 */
fun Application.rejectMalformedQueryStrings() {
    intercept(ApplicationCallPipeline.Plugins) {
        try {
            call.request.queryParameters.isEmpty()
        } catch (e: IllegalArgumentException) {
            call.respond(HttpStatusCode.BadRequest, ErrorBody("bad_request", "malformed query string: ${e.message}"))
            finish()
        }
    }
}
