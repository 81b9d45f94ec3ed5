package ceiling.spring.webfluxjpa;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring WebFlux on Netty calling blocking Spring Data JPA (Hibernate, HikariCP) through
 * {@code Mono.fromCallable(...).subscribeOn(scheduler)}: source 003's "WebFlux + JDBC" cell as the
 * source wrote it (its JDBC apps used JPA), the scheduler bounded to the pool size ({@link Blocking}).
 * Serves {@code GET /orders} (plan 003's endpoint), {@code /health} and {@code /metrics}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        // WORKERS sizes Reactor Netty's event loops (HTTP only here; default would be max(4, CPUs)).
        // Set before Reactor Netty initialises.
        String workers = System.getenv("WORKERS");
        if (workers != null && System.getProperty("reactor.netty.ioWorkerCount") == null) {
            System.setProperty("reactor.netty.ioWorkerCount", workers);
        }
        SpringApplication.run(Application.class, args);
    }
}
