package ceiling.spring.webfluxdatar2dbc;

import ceiling.spring.api.Inputs;
import ceiling.spring.api.OrderDto;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Flux;

@RestController
public class OrderController {
    private final OrderRepository orders;

    public OrderController(OrderRepository orders) {
        this.orders = orders;
    }

    @GetMapping("/orders")
    public Flux<OrderDto> list(@RequestParam(required = false) String limit) {
        return orders.first(Inputs.limit(limit)).map(Order::toDto);
    }
}
