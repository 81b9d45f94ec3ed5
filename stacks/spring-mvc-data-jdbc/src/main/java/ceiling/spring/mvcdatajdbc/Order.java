package ceiling.spring.mvcdatajdbc;

import ceiling.spring.api.OrderDto;
import java.time.Instant;
import org.springframework.data.annotation.Id;
import org.springframework.data.relational.core.mapping.Table;

/** A row of {@code orders}, a Spring Data JDBC aggregate (columns by Spring Data's snake_case naming). */
@Table("orders")
public record Order(@Id Long id, String customer, String item, int quantity, long priceCents, Instant createdAt) {
    /** The API's representation (every field). */
    public OrderDto toDto() {
        return new OrderDto(id, customer, item, quantity, priceCents, createdAt);
    }
}
