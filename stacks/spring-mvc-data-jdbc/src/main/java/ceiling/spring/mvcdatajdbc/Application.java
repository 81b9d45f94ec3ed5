package ceiling.spring.mvcdatajdbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring MVC on Tomcat + a Spring Data JDBC repository (HikariCP): source 002's "Spring WebMVC +
 * Spring Data JDBC" service. Serves {@code GET /orders} (plan 002's endpoint), {@code /health} and
 * {@code /metrics}. Scans {@code ceiling.spring}: this package plus {@code ceiling.spring.mvc}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
