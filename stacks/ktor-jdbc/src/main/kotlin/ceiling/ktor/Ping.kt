package ceiling.ktor

import io.ktor.http.ContentType
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import kotlinx.serialization.Serializable

// ping workload (source 004): exact bodies and SQL.
const val SQL_DB_PING = "SELECT json_build_object('ok', true, 'message', 'OK')::text"
const val SQL_DB_TIME = "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text"

@Serializable
data class PingDto(val ok: Boolean, val message: String)

@Serializable
data class TimeDto(val serverTime: Long)

private val PONG = PingDto(ok = true, message = "OK")

class PingRepository(private val db: Database) {
    /** The one text value [sql] returns. */
    suspend fun text(sql: String): String = db.query { c ->
        c.prepareStatement(sql).use { ps ->
            ps.executeQuery().use { rs ->
                rs.next()
                rs.getString(1)
            }
        }
    }
}

fun Route.pingRoutes(repo: PingRepository) {
    get("/ping") { call.respond(PONG) }
    get("/time") { call.respond(TimeDto(System.currentTimeMillis() / 1000)) }
    // The text the query returns, verbatim.
    get("/db/ping") { call.respondText(repo.text(SQL_DB_PING), ContentType.Application.Json) }
    get("/db/time") { call.respondText(repo.text(SQL_DB_TIME), ContentType.Application.Json) }
}
