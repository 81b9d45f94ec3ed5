package ceiling.helidon;

import java.nio.charset.StandardCharsets;

import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.HealthDto;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.jdbi.v3.core.Jdbi;

/** /health and /metrics. */
final class OpsService implements HttpService {
    private static final HealthDto UP = new HealthDto("UP");
    private static final HealthDto DOWN = new HealthDto("DOWN");
    /** Prometheus text exposition format 0.0.4, what PrometheusMeterRegistry.scrape() writes. */
    private static final String PROMETHEUS_TEXT = "text/plain; version=0.0.4; charset=utf-8";

    private final Jdbi jdbi;
    private final PrometheusMeterRegistry registry;

    OpsService(Jdbi jdbi, PrometheusMeterRegistry registry) {
        this.jdbi = jdbi;
        this.registry = registry;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/health", this::health)
                .get("/metrics", this::metrics);
    }

    /** 200 once the pool hands out a connection that validates; 503 otherwise (database not up yet). */
    private void health(ServerRequest req, ServerResponse res) {
        boolean up;
        try {
            up = jdbi.withHandle(h -> h.getConnection().isValid(2));
        } catch (Exception e) {
            up = false;
        }
        if (up) {
            res.send(UP);
        } else {
            res.status(Status.SERVICE_UNAVAILABLE_503).send(DOWN);
        }
    }

    /**
     * Micrometer's Prometheus registry: JVM memory, GC, threads, class loading, process CPU
     * (process_cpu_usage), file descriptors, HikariCP's pool, and the Prometheus client's process
     * collector (process_cpu_seconds_total, process_resident_memory_bytes, ...).
     */
    private void metrics(ServerRequest req, ServerResponse res) {
        res.header(HeaderNames.CONTENT_TYPE, PROMETHEUS_TEXT).send(registry.scrape().getBytes(StandardCharsets.UTF_8));
    }
}
