package ceiling.ktor

import io.ktor.http.HttpStatusCode
import io.ktor.server.response.respond
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.put
import io.ktor.server.routing.route
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonObject
import java.sql.PreparedStatement
import java.sql.ResultSet
import java.time.OffsetDateTime
import java.util.UUID

// status workload (source 000). SQL exactly as in contract/API.md (JDBC writes `?` for `$n`).
const val SQL_STATUS_GET = "SELECT id, status, updated_at FROM status WHERE id = ?"
const val SQL_STATUS_GET_MANY = "SELECT id, status, updated_at FROM status WHERE id = ANY(?) ORDER BY id"
const val SQL_STATUS_INSERT =
    "INSERT INTO status (id, status) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at"
const val SQL_STATUS_UPDATE = "UPDATE status SET status = ?, updated_at = now() WHERE id = ? RETURNING id, status, updated_at"

@Serializable
data class StatusDto(val id: String, val status: Int, val updatedAt: String)

/** POST /status body; fields checked in the handler (Inputs.kt). */
class CreateStatusRequest(body: JsonObject) {
    val id = body["id"]
    val status = body["status"]
}

/** PUT /status/{id} body. */
class UpdateStatusRequest(body: JsonObject) {
    val status = body["status"]
}

class StatusRepository(private val db: Database) {
    suspend fun get(id: UUID): StatusDto? = db.query { c ->
        c.prepareStatement(SQL_STATUS_GET).use { ps ->
            ps.setObject(1, id)
            ps.singleStatus()
        }
    }

    suspend fun getMany(ids: List<UUID>): List<StatusDto> = db.query { c ->
        c.prepareStatement(SQL_STATUS_GET_MANY).use { ps ->
            ps.setArray(1, c.createArrayOf("uuid", ids.toTypedArray()))
            ps.executeQuery().use { rs ->
                val out = ArrayList<StatusDto>(ids.size)
                while (rs.next()) out += rs.toStatus()
                out
            }
        }
    }

    /** null when the id already exists (ON CONFLICT DO NOTHING returned no row). */
    suspend fun insert(id: UUID, status: Short): StatusDto? = db.query { c ->
        c.prepareStatement(SQL_STATUS_INSERT).use { ps ->
            ps.setObject(1, id)
            ps.setShort(2, status)
            ps.singleStatus()
        }
    }

    /** null when there is no such id. */
    suspend fun update(id: UUID, status: Short): StatusDto? = db.query { c ->
        c.prepareStatement(SQL_STATUS_UPDATE).use { ps ->
            ps.setShort(1, status)
            ps.setObject(2, id)
            ps.singleStatus()
        }
    }

    private fun PreparedStatement.singleStatus(): StatusDto? =
        executeQuery().use { rs -> if (rs.next()) rs.toStatus() else null }

    private fun ResultSet.toStatus() = StatusDto(
        id = getObject(1, UUID::class.java).toString(),
        status = getShort(2).toInt(),
        updatedAt = formatTime(getObject(3, OffsetDateTime::class.java)),
    )
}

fun Route.statusRoutes(repo: StatusRepository) {
    route("/status/{id}") {
        get {
            val id = requireUuid(call.parameters["id"])
            call.respond(repo.get(id) ?: throw ApiException.notFound("no status with this id"))
        }
        put {
            val id = requireUuid(call.parameters["id"])
            val req = UpdateStatusRequest(call.receiveJsonObject())
            val status = requireSmallint("status", req.status.requireLong("status"))
            call.respond(repo.update(id, status) ?: throw ApiException.notFound("no status with this id"))
        }
        otherMethodsNotAllowed()
    }
    get("/status") {
        val ids = parseStatusIds(call.queryValues("ids"))
        call.respond(repo.getMany(ids))
    }
    post("/status") {
        val req = CreateStatusRequest(call.receiveJsonObject())
        val id = requireUuid(req.id.requireString("id"))
        val status = requireSmallint("status", req.status.requireLong("status"))
        val created = repo.insert(id, status) ?: throw ApiException.conflict("a status with this id already exists")
        call.respond(HttpStatusCode.Created, created)
    }
}
