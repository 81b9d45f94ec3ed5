package ceiling.spring.mvcdatajdbc;

import ceiling.spring.api.Inputs;
import ceiling.spring.api.OrderDto;
import java.util.List;
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
        return orders.first(Inputs.limit(limit)).stream().map(Order::toDto).toList();
    }
}
