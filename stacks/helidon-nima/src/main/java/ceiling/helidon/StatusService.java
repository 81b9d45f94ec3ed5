package ceiling.helidon;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.UUID;

import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.StatusDto;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.mapper.RowMapper;
import org.jdbi.v3.core.statement.StatementContext;

/** status workload (source 000). SQL as in contract/API.md (JDBI sends its named parameters as $n). */
final class StatusService implements HttpService {
    static final String SQL_GET = "SELECT id, status, updated_at FROM status WHERE id = :id";
    static final String SQL_GET_MANY = "SELECT id, status, updated_at FROM status WHERE id = ANY(:ids) ORDER BY id";
    static final String SQL_INSERT = "INSERT INTO status (id, status) VALUES (:id, :status) "
            + "ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at";
    static final String SQL_UPDATE = "UPDATE status SET status = :status, updated_at = now() WHERE id = :id "
            + "RETURNING id, status, updated_at";

    private static final RowMapper<StatusDto> ROW = StatusService::row;

    private final Jdbi jdbi;

    StatusService(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/status", this::getMany)
                .post("/status", this::create)
                .get("/status/{id}", this::get)
                .put("/status/{id}", this::update);
    }

    private void get(ServerRequest req, ServerResponse res) {
        UUID id = Inputs.requireUuid(Http.pathParam(req, "id"));
        StatusDto dto = jdbi.withHandle(h -> h.createQuery(SQL_GET)
                .bind("id", id)
                .map(ROW)
                .findOne())
                .orElseThrow(() -> ApiException.notFound("no status with this id"));
        res.send(dto);
    }

    private void getMany(ServerRequest req, ServerResponse res) {
        List<UUID> ids = Inputs.parseStatusIds(Http.queryAll(req, "ids"));
        List<StatusDto> rows = jdbi.withHandle(h -> h.createQuery(SQL_GET_MANY)
                .bindArray("ids", UUID.class, ids)
                .map(ROW)
                .list());
        res.send(rows);
    }

    private void create(ServerRequest req, ServerResponse res) {
        ObjectNode body = Http.jsonObject(req);
        UUID id = Inputs.requireUuid(Inputs.requireString(body, "id"));
        short status = Inputs.requireSmallint("status", Inputs.requireLong(body, "status"));
        StatusDto dto = jdbi.withHandle(h -> h.createQuery(SQL_INSERT)
                .bind("id", id)
                .bind("status", status)
                .map(ROW)
                .findOne())
                .orElseThrow(() -> ApiException.conflict("a status with this id already exists"));
        res.status(Status.CREATED_201).send(dto);
    }

    private void update(ServerRequest req, ServerResponse res) {
        UUID id = Inputs.requireUuid(Http.pathParam(req, "id"));
        ObjectNode body = Http.jsonObject(req);
        short status = Inputs.requireSmallint("status", Inputs.requireLong(body, "status"));
        StatusDto dto = jdbi.withHandle(h -> h.createQuery(SQL_UPDATE)
                .bind("status", status)
                .bind("id", id)
                .map(ROW)
                .findOne())
                .orElseThrow(() -> ApiException.notFound("no status with this id"));
        res.send(dto);
    }

    private static StatusDto row(ResultSet rs, StatementContext ctx) throws SQLException {
        return new StatusDto(
                rs.getObject(1, UUID.class).toString(),
                rs.getShort(2),
                Inputs.formatTime(rs.getObject(3, OffsetDateTime.class)));
    }
}
