package ceiling.helidon;

import java.util.logging.Level;
import java.util.logging.Logger;

import io.helidon.common.socket.SocketOptions;
import io.helidon.config.Config;
import io.helidon.http.HttpException;
import io.helidon.http.Status;
import io.helidon.http.media.MediaContext;
import io.helidon.http.media.jackson.JacksonSupport;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;

import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics;

/**
 * helidon-nima: the benchmark API of contract/API.md on Helidon 4 SE. The Níma web server runs
 * each request on its own virtual thread; handlers are plain blocking code (JDBI over a HikariCP
 * pool of PostgreSQL JDBC connections), with no reactive layer. JSON goes through Helidon's Jackson
 * media support; errors are the contract's {"error","message"} bodies from routing error handlers.
 */
public final class Main {
    private static final Logger LOG = Logger.getLogger("ceiling.helidon");

    private Main() {
    }

    public static void main(String[] args) {
        AppConfig cfg;
        try {
            cfg = AppConfig.from(Config.create());
        } catch (IllegalArgumentException e) {
            LOG.severe("bad configuration: " + e.getMessage());
            System.exit(2);
            return;
        }
        LOG.info(String.format("starting: listen 127.0.0.1:%d, pool_size=%d, workers=%d, java %s (%d CPUs, max heap %d MiB)",
                               cfg.httpPort(), cfg.poolSize(), cfg.workers(), Runtime.version(),
                               Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() >> 20));

        PrometheusMeterRegistry registry = metrics();
        Db db = new Db(cfg, registry);

        WebServer server = WebServer.builder()
                .host("127.0.0.1")
                .port(cfg.httpPort())
                // TCP_NODELAY on accepted connections. Níma's default leaves Nagle on, and a response
                // written in more than one segment then waits for the client's delayed ACK: a flat
                // ~40 ms per request at low concurrency (measured: p50 44.1 ms at 100 connections,
                // 2230 RPS at 35% CPU). Tomcat, Netty, Go and uvicorn/uvloop all set it by default.
                .connectionOptions(SocketOptions.builder().tcpNoDelay(true).build())
                // Our own hook below stops the server first, then closes the pool.
                .shutdownHook(false)
                .mediaContext(MediaContext.builder()
                                      .mediaSupportsDiscoverServices(false)
                                      .addMediaSupport(JacksonSupport.create(Http.MAPPER))
                                      .build())
                .routing((HttpRouting.Builder rules) -> routing(rules, db, registry, cfg.ordersId()))
                .build()
                .start();

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            server.stop();
            db.close();
        }, "shutdown"));
        LOG.info("listening on http://127.0.0.1:" + server.port());
    }

    /** No request logging and no per-request metrics: the hot path does only the contract's work. */
    static void routing(HttpRouting.Builder routing, Db db, PrometheusMeterRegistry registry, boolean ordersId) {
        routing.register(new StatusService(db.jdbi))
                .register(new BankService(db.jdbi))
                .register(new OrderService(db.jdbi, ordersId))
                .register(new PingService(db.jdbi))
                .register(new OpsService(db.jdbi, registry))
                .error(ApiException.class, (req, res, e) -> Http.sendError(res, e.status, e.code, e.getMessage()))
                // Helidon's own request errors (e.g. an entity it cannot read, or no media writer for
                // the request's Accept): their status, the contract's body.
                .error(HttpException.class, (req, res, e) ->
                        Http.sendError(res, e.status(), errorCode(e.status()), String.valueOf(e.getMessage())))
                .error(Exception.class, (req, res, e) -> {
                    LOG.log(Level.SEVERE, "request failed: " + req.prologue().method().text() + " " + req.path().path(), e);
                    Http.sendError(res, Status.INTERNAL_SERVER_ERROR_500, "internal_error", "internal error");
                })
                // Anything no route matched: the contract's error body rather than a bare 404.
                .any((req, res) -> Http.sendError(res, Status.NOT_FOUND_404, "not_found", "no such route"));
    }

    static String errorCode(Status status) {
        return switch (status.code()) {
            case 400 -> "bad_request";
            case 404 -> "not_found";
            case 409 -> "conflict";
            case 413 -> "payload_too_large";
            case 415 -> "unsupported_media_type";
            default -> status.code() < 500 ? "bad_request" : "internal_error";
        };
    }

    private static PrometheusMeterRegistry metrics() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new ClassLoaderMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        ProcessMetrics.builder().register(registry.getPrometheusRegistry());
        return registry;
    }
}
