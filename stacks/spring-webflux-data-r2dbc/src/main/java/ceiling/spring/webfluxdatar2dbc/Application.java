package ceiling.spring.webfluxdatar2dbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring WebFlux on Netty + a Spring Data R2DBC repository (r2dbc-pool): source 002's "Spring
 * WebFlux + Spring Data R2DBC" service. Serves {@code GET /orders} (plan 002's endpoint),
 * {@code /health} and {@code /metrics}. Scans {@code ceiling.spring}: this package plus
 * {@code ceiling.spring.webflux}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        // WORKERS sizes Reactor Netty's event loops (HTTP and R2DBC event-loop groups; default would be max(4, CPUs)).
        // Set before Reactor Netty initialises.
        String workers = System.getenv("WORKERS");
        if (workers != null && System.getProperty("reactor.netty.ioWorkerCount") == null) {
            System.setProperty("reactor.netty.ioWorkerCount", workers);
        }
        SpringApplication.run(Application.class, args);
    }
}
