package ceiling.spring.jpa;

import java.util.List;
import org.springframework.data.domain.Limit;
import org.springframework.data.jpa.repository.JpaRepository;

/**
 * rows workload (sources 002 and 003) through Spring Data JPA: a derived query, ordered by id and
 * capped with Spring Data's {@link Limit} (Hibernate writes the SQL; no count query, unlike
 * {@code findAll(Pageable)}).
 */
public interface OrderRepository extends JpaRepository<Order, Long> {
    List<Order> findAllByOrderByIdAsc(Limit limit);
}
