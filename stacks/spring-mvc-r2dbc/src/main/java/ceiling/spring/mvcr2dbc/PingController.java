package ceiling.spring.mvcr2dbc;

import ceiling.spring.api.HealthDto;
import ceiling.spring.api.PingDto;
import ceiling.spring.api.TimeDto;
import ceiling.spring.r2dbc.PingRepository;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

@RestController
public class PingController {
    private final PingRepository ping;

    public PingController(PingRepository ping) {
        this.ping = ping;
    }

    @GetMapping("/ping")
    public PingDto ping() {
        return PingDto.OK;
    }

    @GetMapping("/time")
    public TimeDto time() {
        return TimeDto.now();
    }

    /** The JSON text the database built, written verbatim. */
    @GetMapping(path = "/db/ping", produces = MediaType.APPLICATION_JSON_VALUE)
    public String dbPing() {
        return ping.dbPing().block();
    }

    @GetMapping(path = "/db/time", produces = MediaType.APPLICATION_JSON_VALUE)
    public String dbTime() {
        return ping.dbTime().block();
    }

    @GetMapping("/health")
    public ResponseEntity<HealthDto> health() {
        return Boolean.TRUE.equals(ping.healthy().block())
                ? ResponseEntity.ok(HealthDto.UP)
                : ResponseEntity.status(503).body(HealthDto.DOWN);
    }
}
