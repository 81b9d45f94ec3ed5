package ceiling.ktor

import io.ktor.http.HttpStatusCode
import io.ktor.server.response.respond
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import io.ktor.server.routing.post
import io.ktor.server.routing.route
import kotlinx.serialization.Serializable
import kotlinx.serialization.json.JsonObject

// bank workload (source 001, made sound). SQL exactly as in contract/API.md. JDBC binds each `?`
// on its own, so the contract's repeated $1/$3 are bound twice (pg_stat_statements shows $1..$5).
const val SQL_CLIENT_INSERT = "INSERT INTO clients (balance) VALUES (?) RETURNING id, balance"
const val SQL_CLIENT_BALANCE = "SELECT id, balance FROM clients WHERE id = ?"
const val SQL_TRANSFER_LOCK = "SELECT id, balance FROM clients WHERE id IN (?, ?) ORDER BY id FOR UPDATE"
const val SQL_TRANSFER_MOVE =
    "UPDATE clients SET balance = balance + CASE WHEN id = ? THEN -?::bigint ELSE ?::bigint END WHERE id IN (?, ?)"
const val SQL_TRANSFER_LOG = "INSERT INTO transfers (from_id, to_id, amount) VALUES (?, ?, ?)"

@Serializable
data class ClientDto(val id: Long, val balance: Long)

@Serializable
data class TransferDto(val from: Long, val to: Long, val amount: Long)

/** POST /clients body; fields checked below. */
class CreateClientRequest(body: JsonObject) {
    val balance = body["balance"]
}

/** POST /transfers body. */
class TransferRequest(body: JsonObject) {
    val from = body["from"]
    val to = body["to"]
    val amount = body["amount"]
}

fun CreateClientRequest.validBalance(): Long {
    val b = balance.requireLong("balance")
    if (b < 0 || b > MAX_BALANCE) throw ApiException.badRequest("field \"balance\": $b is outside 0…2^62")
    return b
}

fun TransferRequest.validate(): TransferDto {
    val t = TransferDto(from.requireLong("from"), to.requireLong("to"), amount.requireLong("amount"))
    if (t.amount <= 0) throw ApiException.badRequest("field \"amount\" must be positive")
    if (t.from == t.to) throw ApiException.badRequest("\"from\" and \"to\" must differ")
    return t
}

class BankRepository(private val db: Database) {
    suspend fun create(balance: Long): ClientDto = db.query { c ->
        c.prepareStatement(SQL_CLIENT_INSERT).use { ps ->
            ps.setLong(1, balance)
            ps.executeQuery().use { rs ->
                rs.next()
                ClientDto(rs.getLong(1), rs.getLong(2))
            }
        }
    }

    suspend fun balance(id: Long): ClientDto? = db.query { c ->
        c.prepareStatement(SQL_CLIENT_BALANCE).use { ps ->
            ps.setLong(1, id)
            ps.executeQuery().use { rs -> if (rs.next()) ClientDto(rs.getLong(1), rs.getLong(2)) else null }
        }
    }

    /**
     * One transaction: lock both rows in id order (no deadlocks), check, move the money, log the
     * transfer. Any exception, the 404/409 ones included, rolls it back.
     */
    suspend fun transfer(t: TransferDto) = db.transaction { c ->
        var found = 0
        var payer = 0L
        var payee = 0L
        c.prepareStatement(SQL_TRANSFER_LOCK).use { ps ->
            ps.setLong(1, t.from)
            ps.setLong(2, t.to)
            ps.executeQuery().use { rs ->
                while (rs.next()) {
                    found++
                    if (rs.getLong(1) == t.from) payer = rs.getLong(2) else payee = rs.getLong(2)
                }
            }
        }
        if (found < 2) throw ApiException.notFound("unknown client")
        if (payer < t.amount) throw ApiException.conflict("insufficient funds")
        if (payee > MAX_BALANCE - t.amount) throw ApiException.conflict("the payee's balance would exceed 2^62")

        c.prepareStatement(SQL_TRANSFER_MOVE).use { ps ->
            ps.setLong(1, t.from)
            ps.setLong(2, t.amount)
            ps.setLong(3, t.amount)
            ps.setLong(4, t.from)
            ps.setLong(5, t.to)
            ps.executeUpdate()
        }
        c.prepareStatement(SQL_TRANSFER_LOG).use { ps ->
            ps.setLong(1, t.from)
            ps.setLong(2, t.to)
            ps.setLong(3, t.amount)
            ps.executeUpdate()
        }
    }
}

fun Route.bankRoutes(repo: BankRepository) {
    post("/clients") {
        val balance = CreateClientRequest(call.receiveJsonObject()).validBalance()
        call.respond(HttpStatusCode.Created, repo.create(balance))
    }
    route("/clients/{id}/balance") {
        get {
            val id = parseClientId(call.parameters["id"])
            call.respond(repo.balance(id) ?: throw ApiException.notFound("no client with this id"))
        }
        otherMethodsNotAllowed()
    }
    post("/transfers") {
        val t = TransferRequest(call.receiveJsonObject()).validate()
        repo.transfer(t)
        call.respond(t)
    }
}
