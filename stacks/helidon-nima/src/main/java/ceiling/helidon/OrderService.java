package ceiling.helidon;

import java.time.OffsetDateTime;
import java.util.List;

import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.OrderDto;
import ceiling.helidon.Dtos.OrderNoIdDto;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.mapper.RowMapper;

/**
 * rows workload (sources 002, 003). SQL as in contract/API.md. Every field, `id` included, unless
 * ORDERS_ID=omit: then the rows leave out {@code id} as source 002's Níma service did (the same
 * query; only the payload differs).
 */
final class OrderService implements HttpService {
    static final String SQL_ORDERS =
            "SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT :limit";

    private static final RowMapper<OrderDto> ROW = (rs, ctx) -> new OrderDto(
            rs.getLong(1),
            rs.getString(2),
            rs.getString(3),
            rs.getInt(4),
            rs.getLong(5),
            Inputs.formatTime(rs.getObject(6, OffsetDateTime.class)));

    private static final RowMapper<OrderNoIdDto> ROW_NO_ID = (rs, ctx) -> new OrderNoIdDto(
            rs.getString(2),
            rs.getString(3),
            rs.getInt(4),
            rs.getLong(5),
            Inputs.formatTime(rs.getObject(6, OffsetDateTime.class)));

    private final Jdbi jdbi;
    private final boolean withId;

    OrderService(Jdbi jdbi, boolean withId) {
        this.jdbi = jdbi;
        this.withId = withId;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/orders", this::list);
    }

    private void list(ServerRequest req, ServerResponse res) {
        int limit = Inputs.parseLimit(Http.queryAll(req, "limit"));
        RowMapper<?> row = withId ? ROW : ROW_NO_ID;
        List<?> rows = jdbi.withHandle(h -> h.createQuery(SQL_ORDERS)
                .bind("limit", limit)
                .map(row)
                .list());
        res.send(rows);
    }
}
