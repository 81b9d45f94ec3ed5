package ceiling.ktor

import io.ktor.server.response.respond
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import kotlinx.serialization.Serializable
import java.time.OffsetDateTime

// rows workload (sources 002, 003). SQL exactly as in contract/API.md.
const val SQL_ORDERS = "SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT ?"

@Serializable
data class OrderDto(
    val id: Long,
    val customer: String,
    val item: String,
    val quantity: Int,
    val priceCents: Long,
    val createdAt: String,
)

class OrderRepository(private val db: Database) {
    suspend fun list(limit: Int): List<OrderDto> = db.query { c ->
        c.prepareStatement(SQL_ORDERS).use { ps ->
            ps.setInt(1, limit)
            ps.executeQuery().use { rs ->
                val out = ArrayList<OrderDto>(limit)
                while (rs.next()) {
                    out += OrderDto(
                        id = rs.getLong(1),
                        customer = rs.getString(2),
                        item = rs.getString(3),
                        quantity = rs.getInt(4),
                        priceCents = rs.getLong(5),
                        createdAt = formatTime(rs.getObject(6, OffsetDateTime::class.java)),
                    )
                }
                out
            }
        }
    }
}

fun Route.orderRoutes(repo: OrderRepository) {
    get("/orders") {
        val limit = parseLimit(call.queryValues("limit"))
        call.respond(repo.list(limit))
    }
}
