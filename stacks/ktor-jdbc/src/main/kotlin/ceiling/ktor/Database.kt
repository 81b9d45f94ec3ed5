package ceiling.ktor

import com.zaxxer.hikari.HikariConfig
import com.zaxxer.hikari.HikariDataSource
import io.micrometer.core.instrument.MeterRegistry
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.Dispatchers
import kotlinx.coroutines.withContext
import org.postgresql.ds.PGSimpleDataSource
import java.io.Closeable
import java.sql.Connection

/**
 * The blocking JDBC side: a HikariCP pool of [Config.poolSize] connections and the coroutine
 * dispatcher every JDBC call runs on.
 *
 * The dispatcher is `Dispatchers.IO.limitedParallelism(poolSize)`: a view of the IO scheduler that
 * runs at most poolSize blocks at once. kotlinx.coroutines documents exactly this use ("a DB
 * connection pool of N connections"): views of Dispatchers.IO are elastic, not bounded by IO's own
 * 64-thread limit, threads are started on demand and reused, and there is no executor to shut down.
 * Because parallelism equals the pool size, a thread never blocks in Hikari's getConnection()
 * waiting for a connection: requests beyond the pool wait as suspended coroutines (no thread held),
 * in FIFO order, and the Netty event loops never block on the database.
 */
class Database(cfg: Config, meterRegistry: MeterRegistry?) : Closeable {
    val dataSource: HikariDataSource = HikariDataSource(hikariConfig(cfg, meterRegistry))

    val dispatcher: CoroutineDispatcher = Dispatchers.IO.limitedParallelism(cfg.poolSize)

    /** Runs [block] with a pooled connection on the JDBC dispatcher (autocommit: one statement). */
    suspend fun <T> query(block: (Connection) -> T): T =
        withContext(dispatcher) { dataSource.connection.use(block) }

    /** Runs [block] in one transaction (BEGIN … COMMIT); any exception rolls it back. */
    suspend fun <T> transaction(block: (Connection) -> T): T = withContext(dispatcher) {
        dataSource.connection.use { c ->
            c.autoCommit = false
            try {
                val result = block(c)
                c.commit()
                result
            } catch (e: Throwable) {
                runCatching { c.rollback() }.exceptionOrNull()?.let(e::addSuppressed)
                throw e
            } finally {
                runCatching { c.autoCommit = true } // no round trip: no transaction is open here
            }
        }
    }

    override fun close() = dataSource.close()

    companion object {
        fun hikariConfig(cfg: Config, meterRegistry: MeterRegistry?): HikariConfig = HikariConfig().apply {
            dataSource = PGSimpleDataSource().apply {
                serverNames = arrayOf(cfg.dbHost)
                portNumbers = intArrayOf(cfg.dbPort)
                databaseName = cfg.dbName
                user = cfg.dbUser
                password = cfg.dbPassword
                sslMode = cfg.dbSslMode
                applicationName = "ktor-jdbc"
            }
            poolName = "ktor-jdbc"
            // DB_POOL_SIZE; minimumIdle is left unset, so it equals maximumPoolSize: a fixed-size
            // pool, as HikariCP recommends (and as the Spring stacks configure it).
            maximumPoolSize = cfg.poolSize
            // Only reached when the database is unreachable: the dispatcher never runs more
            // blocking calls than there are connections. 5 s, like go-pgx's bound on pool waits.
            connectionTimeout = 5_000
            // Start even if the database is not up yet; /health answers 503 until it is.
            initializationFailTimeout = -1
            if (meterRegistry != null) metricRegistry = meterRegistry
        }
    }
}
