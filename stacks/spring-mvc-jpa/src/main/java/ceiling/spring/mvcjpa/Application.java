package ceiling.spring.mvcjpa;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring MVC on Tomcat + Spring Data JPA (Hibernate, HikariCP): source 003's "MVC + JDBC" cell as
 * the source wrote it (its JDBC apps used JPA). Serves {@code GET /orders} (plan 003's endpoint),
 * {@code /health} and {@code /metrics}. Scans {@code ceiling.spring}: this package plus the shared
 * modules {@code ceiling.spring.mvc} and {@code ceiling.spring.jpa}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
