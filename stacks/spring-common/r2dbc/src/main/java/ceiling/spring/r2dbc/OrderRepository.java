package ceiling.spring.r2dbc;

import ceiling.spring.api.OrderDto;
import io.r2dbc.spi.Readable;
import java.time.Instant;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import reactor.core.publisher.Flux;

/** rows workload (sources 002 and 003): the first N orders. */
@Repository
public class OrderRepository {
    private final DatabaseClient db;

    public OrderRepository(DatabaseClient db) {
        this.db = db;
    }

    private static OrderDto row(Readable row) {
        return new OrderDto(
                row.get("id", Long.class),
                row.get("customer", String.class),
                row.get("item", String.class),
                row.get("quantity", Integer.class),
                row.get("price_cents", Long.class),
                row.get("created_at", Instant.class));
    }

    public Flux<OrderDto> first(int limit) {
        return db.sql("SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT $1")
                .bind(0, limit)
                .map(OrderRepository::row)
                .all();
    }
}
