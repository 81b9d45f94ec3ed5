package ceiling.spring.jdbc;

import ceiling.spring.api.OrderDto;
import java.time.OffsetDateTime;
import java.util.List;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Repository;

/** rows workload (sources 002 and 003): the first N orders. */
@Repository
public class OrderRepository {
    private static final RowMapper<OrderDto> ROW = (rs, n) -> new OrderDto(
            rs.getLong("id"),
            rs.getString("customer"),
            rs.getString("item"),
            rs.getInt("quantity"),
            rs.getLong("price_cents"),
            rs.getObject("created_at", OffsetDateTime.class).toInstant());

    private final JdbcTemplate jdbc;

    public OrderRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public List<OrderDto> first(int limit) {
        return jdbc.query("SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT ?",
                ROW, limit);
    }
}
