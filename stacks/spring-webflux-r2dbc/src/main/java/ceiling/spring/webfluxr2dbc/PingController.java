package ceiling.spring.webfluxr2dbc;

import ceiling.spring.api.HealthDto;
import ceiling.spring.api.PingDto;
import ceiling.spring.api.TimeDto;
import ceiling.spring.r2dbc.PingRepository;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

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

    /** The JSON text the database built, written verbatim (a String is not re-encoded as JSON). */
    @GetMapping(path = "/db/ping", produces = MediaType.APPLICATION_JSON_VALUE)
    public Mono<String> dbPing() {
        return ping.dbPing();
    }

    @GetMapping(path = "/db/time", produces = MediaType.APPLICATION_JSON_VALUE)
    public Mono<String> dbTime() {
        return ping.dbTime();
    }

    @GetMapping("/health")
    public Mono<ResponseEntity<HealthDto>> health() {
        return ping.healthy().map(up -> up
                ? ResponseEntity.ok(HealthDto.UP)
                : ResponseEntity.status(503).body(HealthDto.DOWN));
    }
}
