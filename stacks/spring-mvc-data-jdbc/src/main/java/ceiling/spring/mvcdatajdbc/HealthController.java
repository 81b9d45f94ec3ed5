package ceiling.spring.mvcdatajdbc;

import ceiling.spring.api.HealthDto;
import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/** {@code GET /health}: UP when a pooled connection is valid. */
@RestController
public class HealthController {
    private final DataSource dataSource;

    public HealthController(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    @GetMapping("/health")
    public ResponseEntity<HealthDto> health() {
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
