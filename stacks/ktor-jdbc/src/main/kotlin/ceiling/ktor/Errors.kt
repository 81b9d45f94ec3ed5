package ceiling.ktor

import io.ktor.http.HttpStatusCode
import io.ktor.server.http.content.HttpStatusCodeContent
import io.ktor.server.application.ApplicationCall
import io.ktor.server.application.log
import io.ktor.server.plugins.BadRequestException
import io.ktor.server.plugins.PayloadTooLargeException
import io.ktor.server.plugins.UnsupportedMediaTypeException
import io.ktor.server.plugins.statuspages.StatusPagesConfig
import io.ktor.server.request.httpMethod
import io.ktor.server.request.path
import io.ktor.server.response.respond
import io.ktor.server.routing.Route
import kotlinx.serialization.Serializable

/** The contract's error body: `{"error":"<code>","message":"<human text>"}`. */
@Serializable
data class ErrorBody(val error: String, val message: String)

/**
 * An answer other than success, with its HTTP status and contract error code. No stack trace: these
 * are ordinary outcomes (404, 409, bad input), thrown on the request path.
 */
class ApiException(val status: HttpStatusCode, val code: String, override val message: String) :
    RuntimeException(message, null, false, false) {
    companion object {
        fun badRequest(message: String) = ApiException(HttpStatusCode.BadRequest, "bad_request", message)
        fun notFound(message: String) = ApiException(HttpStatusCode.NotFound, "not_found", message)
        fun conflict(message: String) = ApiException(HttpStatusCode.Conflict, "conflict", message)
        fun unsupportedMediaType(message: String) =
            ApiException(HttpStatusCode.UnsupportedMediaType, "unsupported_media_type", message)
        fun methodNotAllowed() =
            ApiException(HttpStatusCode.MethodNotAllowed, "method_not_allowed", "method not allowed on this route")
        fun payloadTooLarge() = ApiException(
            HttpStatusCode.PayloadTooLarge, "payload_too_large",
            "request body is larger than $MAX_BODY_BYTES bytes",
        )
    }
}

private suspend fun ApplicationCall.respondError(e: ApiException) = respond(e.status, ErrorBody(e.code, e.message))

/**
 * StatusPages: every error becomes a JSON body. Bad input is always 4xx: our own [ApiException]s,
 * and whatever Ktor itself throws for a request it cannot read (BadRequestException covers bad
 * path encoding, bad Content-Type syntax, failed body conversion). Only a failure of our own (the
 * database, a bug) is a 500, and only those are logged.
 */
fun StatusPagesConfig.errorPages() {
    exception<ApiException> { call, e -> call.respondError(e) }
    exception<BadRequestException> { call, e ->
        call.respondError(ApiException.badRequest(e.message ?: "bad request"))
    }
    exception<UnsupportedMediaTypeException> { call, e ->
        call.respondError(ApiException.unsupportedMediaType(e.message ?: "unsupported media type"))
    }
    exception<PayloadTooLargeException> { call, _ -> call.respondError(ApiException.payloadTooLarge()) }
    exception<Throwable> { call, e ->
        call.application.log.error("request failed: ${call.request.httpMethod.value} ${call.request.path()}", e)
        call.respond(HttpStatusCode.InternalServerError, ErrorBody("internal_error", "internal error"))
    }
    // Responses Ktor makes by itself (no route for the path: 404; the path exists but not with this
    // method: 405) carry no body; give them the contract's. Our own JSON error bodies pass as they are.
    status(HttpStatusCode.NotFound, HttpStatusCode.MethodNotAllowed) { code ->
        if (content is HttpStatusCodeContent) {
            if (code == HttpStatusCode.NotFound) {
                call.respond(code, ErrorBody("not_found", "no such route"))
            } else {
                call.respondError(ApiException.methodNotAllowed())
            }
        }
    }
}

/**
 * Ktor answers 405 by itself only where every path segment is a constant (`/status`, `/ping`); on a
 * path with a parameter another method would be a 404. This handler on the path's own route node
 * makes it 405 there too, as go-pgx (chi) and the Spring stacks answer. Method-specific children
 * match with a higher quality, so it is reached only when none of them does.
 */
fun Route.otherMethodsNotAllowed() = handle { throw ApiException.methodNotAllowed() }
