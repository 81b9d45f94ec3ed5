package ceiling.spring.jpa;

import org.springframework.boot.autoconfigure.domain.EntityScan;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.jpa.repository.config.EnableJpaRepositories;

/**
 * Entities and repositories live in this shared module, outside the application's own package
 * (where Spring Boot would look by default), so they are named here.
 */
@Configuration(proxyBeanMethods = false)
@EntityScan(basePackageClasses = Order.class)
@EnableJpaRepositories(basePackageClasses = OrderRepository.class)
public class JpaConfig {}
