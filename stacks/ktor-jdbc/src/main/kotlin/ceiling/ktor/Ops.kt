package ceiling.ktor

import io.ktor.http.ContentType
import io.ktor.http.HttpStatusCode
import io.ktor.server.response.respond
import io.ktor.server.response.respondText
import io.ktor.server.routing.Route
import io.ktor.server.routing.get
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry
import kotlinx.coroutines.CancellationException
import kotlinx.serialization.Serializable

@Serializable
data class HealthDto(val status: String)

private val UP = HealthDto("UP")
private val DOWN = HealthDto("DOWN")

/** Prometheus text exposition format 0.0.4, what PrometheusMeterRegistry.scrape() writes. */
private val PROMETHEUS_TEXT = ContentType.parse("text/plain; version=0.0.4; charset=utf-8")

fun Route.opsRoutes(db: Database, registry: PrometheusMeterRegistry) {
    // 200 once the pool hands out a connection that validates; 503 otherwise (e.g. the database is
    // not up yet: Hikari gives up after its 5 s connectionTimeout).
    get("/health") {
        val up = try {
            db.query { c -> c.isValid(2) }
        } catch (e: CancellationException) {
            throw e
        } catch (e: Exception) {
            false
        }
        if (up) call.respond(UP) else call.respond(HttpStatusCode.ServiceUnavailable, DOWN)
    }
    // Micrometer's Prometheus registry: Ktor's MicrometerMetrics (JVM memory, GC, threads,
    // class loading, process CPU, file descriptors, per-route request timers), HikariCP's pool
    // metrics, and the Prometheus client's process collector (resident memory, CPU seconds).
    get("/metrics") { call.respondText(registry.scrape(), PROMETHEUS_TEXT) }
}
