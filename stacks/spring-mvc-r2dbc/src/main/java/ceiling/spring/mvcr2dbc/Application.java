package ceiling.spring.mvcr2dbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring MVC on Tomcat calling R2DBC and blocking on each result ({@code .block()} in the
 * controllers): source 003's "Web MVC + R2DBC" cell, written the plain way, not tuned.
 * Scans {@code ceiling.spring}: this package plus {@code ceiling.spring.mvc} and {@code ceiling.spring.r2dbc}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        // WORKERS sizes Reactor Netty's event loops, which here carry only the R2DBC driver's I/O
        // (default would be max(4, CPUs)). Set before Reactor Netty initialises.
        String workers = System.getenv("WORKERS");
        if (workers != null && System.getProperty("reactor.netty.ioWorkerCount") == null) {
            System.setProperty("reactor.netty.ioWorkerCount", workers);
        }
        SpringApplication.run(Application.class, args);
    }
}
