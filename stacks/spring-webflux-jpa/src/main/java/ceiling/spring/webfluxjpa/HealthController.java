package ceiling.spring.webfluxjpa;

import ceiling.spring.api.HealthDto;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** {@code GET /health}: UP when a pooled connection is valid (checked on the JDBC scheduler). */
@RestController
public class HealthController {
    private final DataSource dataSource;
    private final Blocking blocking;

    public HealthController(DataSource dataSource, Blocking blocking) {
        this.dataSource = dataSource;
        this.blocking = blocking;
    }

    @GetMapping("/health")
    public Mono<ResponseEntity<HealthDto>> health() {
        return blocking.call(this::check);
    }

    private ResponseEntity<HealthDto> check() {
        try (Connection connection = dataSource.getConnection()) {
            if (connection.isValid(2)) {
                return ResponseEntity.ok(HealthDto.UP);
            }
        } catch (SQLException | RuntimeException e) {
            // DOWN below
        }
        return ResponseEntity.status(503).body(HealthDto.DOWN);
    }
}
