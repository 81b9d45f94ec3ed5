package ceiling.spring.webfluxjdbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring WebFlux on Netty calling blocking JDBC (JdbcTemplate, HikariCP) through
 * {@code Mono.fromCallable(...).subscribeOn(scheduler)}: source 003's "WebFlux + JDBC" cell, done
 * the way its code does it, with the scheduler bounded to the pool size ({@link Blocking}).
 * Scans {@code ceiling.spring}: this package plus {@code ceiling.spring.webflux} and {@code ceiling.spring.jdbc}.
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
