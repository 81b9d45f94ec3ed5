package ceiling.spring.mvcjdbc;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Spring MVC on Tomcat + blocking JDBC (JdbcTemplate, HikariCP): source 000's spring-mvc-jdbc and
 * source 003's "MVC + JDBC" cell. Scans {@code ceiling.spring}: this package (controllers) plus the
 * shared modules on the classpath, {@code ceiling.spring.mvc} and {@code ceiling.spring.jdbc}.
 */
@SpringBootApplication(scanBasePackages = "ceiling.spring")
public class Application {
    public static void main(String[] args) {
        SpringApplication.run(Application.class, args);
    }
}
