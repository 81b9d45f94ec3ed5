package ceiling.helidon;

import java.util.List;

import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.ClientDto;
import ceiling.helidon.Dtos.TransferDto;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.mapper.RowMapper;

/**
 * bank workload (source 001, made sound). SQL as in contract/API.md. JDBI turns each named parameter
 * occurrence into its own JDBC {@code ?}, so the contract's repeated $1/$3 are bound twice
 * (pg_stat_statements shows $1..$5 for the move; the contract allows that).
 */
final class BankService implements HttpService {
    static final String SQL_CLIENT_INSERT = "INSERT INTO clients (balance) VALUES (:balance) RETURNING id, balance";
    static final String SQL_CLIENT_BALANCE = "SELECT id, balance FROM clients WHERE id = :id";
    static final String SQL_TRANSFER_LOCK =
            "SELECT id, balance FROM clients WHERE id IN (:from, :to) ORDER BY id FOR UPDATE";
    static final String SQL_TRANSFER_MOVE = "UPDATE clients SET balance = balance + "
            + "CASE WHEN id = :from THEN -:amount::bigint ELSE :amount::bigint END WHERE id IN (:from, :to)";
    static final String SQL_TRANSFER_LOG = "INSERT INTO transfers (from_id, to_id, amount) VALUES (:from, :to, :amount)";

    private static final RowMapper<ClientDto> CLIENT = (rs, ctx) -> new ClientDto(rs.getLong(1), rs.getLong(2));

    private final Jdbi jdbi;

    BankService(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.post("/clients", this::create)
                .get("/clients/{id}/balance", this::balance)
                .post("/transfers", this::transfer);
    }

    private void create(ServerRequest req, ServerResponse res) {
        ObjectNode body = Http.jsonObject(req);
        long balance = Inputs.requireLong(body, "balance");
        if (balance < 0 || balance > Inputs.MAX_BALANCE) {
            throw ApiException.badRequest("field \"balance\": " + balance + " is outside 0…2^62");
        }
        ClientDto dto = jdbi.withHandle(h -> h.createQuery(SQL_CLIENT_INSERT)
                .bind("balance", balance)
                .map(CLIENT)
                .one());
        res.status(Status.CREATED_201).send(dto);
    }

    private void balance(ServerRequest req, ServerResponse res) {
        long id = Inputs.parseClientId(Http.pathParam(req, "id"));
        ClientDto dto = jdbi.withHandle(h -> h.createQuery(SQL_CLIENT_BALANCE)
                .bind("id", id)
                .map(CLIENT)
                .findOne())
                .orElseThrow(() -> ApiException.notFound("no client with this id"));
        res.send(dto);
    }

    private void transfer(ServerRequest req, ServerResponse res) {
        ObjectNode body = Http.jsonObject(req);
        TransferDto t = new TransferDto(
                Inputs.requireLong(body, "from"),
                Inputs.requireLong(body, "to"),
                Inputs.requireLong(body, "amount"));
        if (t.amount() <= 0) {
            throw ApiException.badRequest("field \"amount\" must be positive");
        }
        if (t.from() == t.to()) {
            throw ApiException.badRequest("\"from\" and \"to\" must differ");
        }
        // One transaction (BEGIN … COMMIT): lock both rows in id order (no deadlocks), check, move
        // the money, log the transfer. Any exception, the 404/409 ones included, rolls it back.
        jdbi.useTransaction(h -> {
            List<ClientDto> rows = h.createQuery(SQL_TRANSFER_LOCK)
                    .bind("from", t.from())
                    .bind("to", t.to())
                    .map(CLIENT)
                    .list();
            if (rows.size() < 2) {
                throw ApiException.notFound("unknown client");
            }
            long payer = 0;
            long payee = 0;
            for (ClientDto c : rows) {
                if (c.id() == t.from()) {
                    payer = c.balance();
                } else {
                    payee = c.balance();
                }
            }
            if (payer < t.amount()) {
                throw ApiException.conflict("insufficient funds");
            }
            if (payee > Inputs.MAX_BALANCE - t.amount()) {
                throw ApiException.conflict("the payee's balance would exceed 2^62");
            }
            h.createUpdate(SQL_TRANSFER_MOVE)
                    .bind("from", t.from())
                    .bind("to", t.to())
                    .bind("amount", t.amount())
                    .execute();
            h.createUpdate(SQL_TRANSFER_LOG)
                    .bind("from", t.from())
                    .bind("to", t.to())
                    .bind("amount", t.amount())
                    .execute();
        });
        res.send(t);
    }
}
