package ceiling.spring.webfluxdatar2dbc;

import ceiling.spring.api.HealthDto;
import java.time.Duration;
import org.springframework.http.ResponseEntity;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** {@code GET /health}: UP when the pool answers {@code SELECT 1} within 2 s. */
@RestController
public class HealthController {
    private final DatabaseClient db;

    public HealthController(DatabaseClient db) {
        this.db = db;
    }

    @GetMapping("/health")
    public Mono<ResponseEntity<HealthDto>> health() {
        return db.sql("SELECT 1").fetch().rowsUpdated()
                .timeout(Duration.ofSeconds(2))
                .map(n -> ResponseEntity.ok(HealthDto.UP))
                .onErrorReturn(ResponseEntity.status(503).body(HealthDto.DOWN));
    }
}
