package ceiling.spring.webfluxr2dbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring WebFlux on Netty + R2DBC (DatabaseClient, r2dbc-pool): source 000's spring-webflux-r2dbc
 * and source 003's "WebFlux + R2DBC" cell. Scans {@code ceiling.spring}: this package plus
 * {@code ceiling.spring.webflux} and {@code ceiling.spring.r2dbc}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        // WORKERS sizes Reactor Netty's event-loop groups: the HTTP server's (reactor-http-epoll-N) and
        // the R2DBC driver's (reactor-tcp-epoll-N), each WORKERS threads (default would be max(4, CPUs)).
        // Set before Reactor Netty initialises.
        String workers = System.getenv("WORKERS");
        if (workers != null && System.getProperty("reactor.netty.ioWorkerCount") == null) {
            System.setProperty("reactor.netty.ioWorkerCount", workers);
        }
        SpringApplication.run(Application.class, args);
    }
}
