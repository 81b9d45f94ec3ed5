package ceiling.ktor

import io.ktor.serialization.kotlinx.json.json
import io.ktor.server.application.Application
import io.ktor.server.application.ApplicationStopped
import io.ktor.server.application.install
import io.ktor.server.engine.connector
import io.ktor.server.engine.embeddedServer
import io.ktor.server.metrics.micrometer.MicrometerMetrics
import io.ktor.server.netty.Netty
import io.ktor.server.plugins.contentnegotiation.ContentNegotiation
import io.ktor.server.plugins.statuspages.StatusPages
import io.ktor.server.routing.routing
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig
import io.micrometer.prometheusmetrics.PrometheusConfig
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry
import io.prometheus.metrics.instrumentation.jvm.ProcessMetrics
import org.slf4j.LoggerFactory
import kotlin.system.exitProcess

/**
 * ktor-jdbc: the benchmark API of contract/API.md on Ktor 3 (Netty engine, routing DSL), blocking
 * JDBC (HikariCP + PostgreSQL JDBC) on a coroutine dispatcher sized to the pool, kotlinx.serialization
 * through ContentNegotiation, StatusPages for errors, Micrometer/Prometheus for /metrics.
 */
fun main() {
    val log = LoggerFactory.getLogger("ceiling.ktor")
    val cfg = try {
        Config.fromEnv(System::getenv)
    } catch (e: IllegalArgumentException) {
        log.error("bad configuration: {}", e.message)
        exitProcess(2)
    }

    log.info(
        "starting: listen 127.0.0.1:{}, pool_size={}, workers={}, java {} ({} CPUs, max heap {} MiB)",
        cfg.httpPort, cfg.poolSize, cfg.workers, Runtime.version(),
        Runtime.getRuntime().availableProcessors(), Runtime.getRuntime().maxMemory() shr 20,
    )

    embeddedServer(
        Netty,
        configure = {
            connector {
                host = "127.0.0.1"
                port = cfg.httpPort
            }
            // Netty event loops: one accepts connections; WORKERS loops do socket I/O and HTTP
            // parsing; WORKERS loops run the calls (routing, JSON, then a hop to the JDBC
            // dispatcher). None of them ever blocks on the database.
            connectionGroupSize = 1
            workerGroupSize = cfg.workers
            callGroupSize = cfg.workers
        },
        module = { module(cfg) },
    ).start(wait = true) // start() also installs a shutdown hook: SIGTERM stops the server cleanly
}

fun Application.module(cfg: Config) {
    val registry = PrometheusMeterRegistry(PrometheusConfig.DEFAULT)
    ProcessMetrics.builder().register(registry.prometheusRegistry)
    install(MicrometerMetrics) {
        this.registry = registry
        // Unknown paths share one route tag instead of one time series each.
        distinctNotRegisteredRoutes = false
        // Count, sum and max per route, as Spring's http.server.requests; no client-side
        // percentile histograms on the hot path (latency percentiles are the load generator's).
        distributionStatisticConfig = DistributionStatisticConfig.builder().build()
    }
    // After MicrometerMetrics, so that its meter filter is in place before Hikari's meters exist.
    val db = Database(cfg, registry)
    monitor.subscribe(ApplicationStopped) { db.close() }

    install(ContentNegotiation) {
        json(ApiJson)
        // JSON is the only representation (contract/API.md): answer it whatever Accept says,
        // as go-pgx does, instead of Ktor's bodiless 406.
        accept { _, _ -> emptyList() }
    }
    install(StatusPages) { errorPages() }
    rejectMalformedQueryStrings()
    limitRequestBodies()

    // No request logging: the hot path does only the work the contract asks for.
    routing {
        statusRoutes(StatusRepository(db))
        bankRoutes(BankRepository(db))
        orderRoutes(OrderRepository(db))
        pingRoutes(PingRepository(db))
        opsRoutes(db, registry)
    }
}
