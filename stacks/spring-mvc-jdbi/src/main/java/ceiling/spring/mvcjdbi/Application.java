package ceiling.spring.mvcjdbi;

import javax.sql.DataSource;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

/**
 * Spring MVC on Tomcat + JDBI 3 over Boot's HikariCP DataSource: source 002's "Spring WebMVC +
 * JDBI" service (the author swapped Spring Data JDBC for JDBI, the library of its Helidon service).
 * Serves {@code GET /orders} (plan 002's endpoint), {@code /health} and {@code /metrics}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }

    /** JDBI's documented Spring wiring: the Boot DataSource, aware of Spring transactions. */
    @Bean
    Jdbi jdbi(DataSource dataSource) {
        return Jdbi.create(new TransactionAwareDataSourceProxy(dataSource)).installPlugin(new PostgresPlugin());
    }
}
