package ceiling.spring.webfluxdatar2dbc;

import org.springframework.data.r2dbc.repository.Query;
import org.springframework.data.repository.reactive.ReactiveCrudRepository;
import reactor.core.publisher.Flux;

/** rows workload: the first N orders, with the contract's SQL (contract/API.md). */
public interface OrderRepository extends ReactiveCrudRepository<Order, Long> {
    @Query("SELECT id, customer, item, quantity, price_cents, created_at FROM orders ORDER BY id LIMIT :limit")
    Flux<Order> first(int limit);
}
