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
import kotlinx.coroutines.CancellationException
import kotlinx.serialization.json.Json

/** The contract's request body limit: 64 KiB; larger is 413. */
const val MAX_BODY_BYTES = 64 * 1024

/**
 * The one Json instance, used by ContentNegotiation both ways. Unknown request fields are ignored;
 * everything else is strict (kotlinx's defaults: no lenient literals, no trailing commas, trailing
 * data after the value is an error). Request DTOs keep their fields as JsonElement so that the
 * field rules (type, range) are checked in one place, Inputs.kt, with the contract's messages.
 */
val ApiJson = Json {
    ignoreUnknownKeys = true
    encodeDefaults = true
}

/**
 * Caps every request body at [MAX_BODY_BYTES], also when it comes chunked (no Content-Length):
 * reads at most one byte more than the limit before anything converts it. Bodies are small JSON
 * objects, so buffering them whole costs nothing.
 */
fun Application.limitRequestBodies() {
    receivePipeline.intercept(ApplicationReceivePipeline.Before) { body ->
        if (body is ByteReadChannel) {
            val buffer = body.readBuffer(MAX_BODY_BYTES + 1)
            if (buffer.size > MAX_BODY_BYTES) throw ApiException.payloadTooLarge()
            proceedWith(ByteReadChannel(buffer))
        }
    }
}

/**
 * Receives a JSON request body as [T] through ContentNegotiation, in the contract's order:
 * Content-Type must be application/json (parameters such as charset allowed) → 415; then the size
 * → 413; then the syntax and shape → 400.
 */
suspend inline fun <reified T : Any> ApplicationCall.receiveJson(): T {
    checkJsonBody()
    return try {
        receive<T>()
    } catch (e: CancellationException) {
        throw e
    } catch (e: ApiException) {
        throw e
    } catch (e: Exception) {
        throw generateSequence<Throwable>(e) { it.cause }.filterIsInstance<ApiException>().firstOrNull()
            ?: ApiException.badRequest("malformed JSON body: ${rootMessage(e)}")
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
