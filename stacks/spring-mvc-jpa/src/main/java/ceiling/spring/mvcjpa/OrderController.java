package ceiling.spring.mvcjpa;

import ceiling.spring.api.Inputs;
import ceiling.spring.api.OrderDto;
import ceiling.spring.jpa.Order;
import ceiling.spring.jpa.OrderRepository;
import java.util.List;
import org.springframework.data.domain.Limit;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class OrderController {
    private final OrderRepository orders;

    public OrderController(OrderRepository orders) {
        this.orders = orders;
    }

    @GetMapping("/orders")
    public List<OrderDto> list(@RequestParam(required = false) String limit) {
        return orders.findAllByOrderByIdAsc(Limit.of(Inputs.limit(limit))).stream().map(Order::toDto).toList();
    }
}
