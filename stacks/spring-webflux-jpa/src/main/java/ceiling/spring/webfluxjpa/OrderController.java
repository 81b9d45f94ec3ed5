package ceiling.spring.webfluxjpa;

import ceiling.spring.api.Inputs;
import ceiling.spring.api.OrderDto;
import ceiling.spring.jpa.Order;
import ceiling.spring.jpa.OrderRepository;
import java.util.List;
import org.springframework.data.domain.Limit;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

@RestController
public class OrderController {
    private final OrderRepository orders;
    private final Blocking blocking;

    public OrderController(OrderRepository orders, Blocking blocking) {
        this.orders = orders;
        this.blocking = blocking;
    }

    @GetMapping("/orders")
    public Mono<List<OrderDto>> list(@RequestParam(required = false) String limit) {
        Limit n = Limit.of(Inputs.limit(limit));
        return blocking.call(() -> orders.findAllByOrderByIdAsc(n).stream().map(Order::toDto).toList());
    }
}
