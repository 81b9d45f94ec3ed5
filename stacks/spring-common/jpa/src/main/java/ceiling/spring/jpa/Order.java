package ceiling.spring.jpa;

import ceiling.spring.api.OrderDto;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import java.time.Instant;

/** A row of {@code orders} (contract/schema.sql), mapped the JPA way: an entity, read-only here. */
@Entity
@Table(name = "orders")
public class Order {
    @Id
    private Long id;

    @Column(nullable = false)
    private String customer;

    @Column(nullable = false)
    private String item;

    @Column(nullable = false)
    private int quantity;

    @Column(name = "price_cents", nullable = false)
    private long priceCents;

    @Column(name = "created_at", nullable = false)
    private Instant createdAt;

    protected Order() {}

    public Long getId() {
        return id;
    }

    public String getCustomer() {
        return customer;
    }

    public String getItem() {
        return item;
    }

    public int getQuantity() {
        return quantity;
    }

    public long getPriceCents() {
        return priceCents;
    }

    public Instant getCreatedAt() {
        return createdAt;
    }

    /** The API's representation (every field; entities are not serialised directly). */
    public OrderDto toDto() {
        return new OrderDto(id, customer, item, quantity, priceCents, createdAt);
    }
}
