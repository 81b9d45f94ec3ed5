package ceiling.spring.mvcdatajdbc;

import java.util.List;
import org.springframework.data.jdbc.repository.query.Query;
import org.springframework.data.repository.ListCrudRepository;

/** rows workload: the first N orders, with the contract's SQL (contract/API.md). */
public interface OrderRepository extends ListCrudRepository<Order, Long> {
    @Query("SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT :limit")
    List<Order> first(int limit);
}
