package ceiling.spring.mvcjdbi;

import ceiling.spring.api.Inputs;
import ceiling.spring.api.OrderDto;
import java.time.OffsetDateTime;
import java.util.List;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.core.mapper.RowMapper;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/** rows workload through JDBI, the same query and mapping as helidon-nima's OrderService. */
@RestController
public class OrderController {
    static final String SQL_ORDERS =
            "SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT :limit";

    private static final RowMapper<OrderDto> ROW = (rs, ctx) -> new OrderDto(
            rs.getLong(1),
            rs.getString(2),
            rs.getString(3),
            rs.getInt(4),
            rs.getLong(5),
            rs.getObject(6, OffsetDateTime.class).toInstant());

    private final Jdbi jdbi;

    public OrderController(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    @GetMapping("/orders")
    public List<OrderDto> list(@RequestParam(required = false) String limit) {
        int n = Inputs.limit(limit);
        return jdbi.withHandle(h -> h.createQuery(SQL_ORDERS).bind("limit", n).map(ROW).list());
    }
}
