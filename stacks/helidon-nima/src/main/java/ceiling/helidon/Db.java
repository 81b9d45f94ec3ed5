package ceiling.helidon;

import java.io.Closeable;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import org.jdbi.v3.core.Jdbi;
import org.jdbi.v3.postgres.PostgresPlugin;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * The database side: a fixed-size HikariCP pool of PostgreSQL JDBC connections, and JDBI over it.
 *
 * Níma runs every request on its own virtual thread, and the handlers call JDBI (blocking JDBC)
 * directly on it: a virtual thread that waits for PostgreSQL, or for a free connection in Hikari,
 * parks and releases its carrier thread. So the number of requests in flight is not bounded by a
 * thread pool; the database concurrency is bounded by the pool (DB_POOL_SIZE connections), and
 * requests beyond it wait in Hikari's getConnection() queue.
 */
final class Db implements Closeable {
    final HikariDataSource dataSource;
    final Jdbi jdbi;

    Db(AppConfig cfg, MeterRegistry meterRegistry) {
        this.dataSource = new HikariDataSource(hikariConfig(cfg, meterRegistry));
        // PostgresPlugin: PostgreSQL's types for JDBI's binders (uuid, uuid[] for bindArray, java.time).
        this.jdbi = Jdbi.create(dataSource).installPlugin(new PostgresPlugin());
    }

    static HikariConfig hikariConfig(AppConfig cfg, MeterRegistry meterRegistry) {
        PGSimpleDataSource pg = new PGSimpleDataSource();
        pg.setServerNames(new String[] {cfg.dbHost()});
        pg.setPortNumbers(new int[] {cfg.dbPort()});
        pg.setDatabaseName(cfg.dbName());
        pg.setUser(cfg.dbUser());
        pg.setPassword(cfg.dbPassword());
        pg.setSslMode(cfg.dbSslMode());
        pg.setApplicationName("helidon-nima");

        HikariConfig hc = new HikariConfig();
        hc.setDataSource(pg);
        hc.setPoolName("helidon-nima");
        // DB_POOL_SIZE, fixed size (minimumIdle = maximumPoolSize), as HikariCP recommends and as the
        // other JVM stacks configure it.
        hc.setMaximumPoolSize(cfg.poolSize());
        hc.setMinimumIdle(cfg.poolSize());
        // Requests beyond the pool wait here, on parked virtual threads: at most 5 s, as every stack
        // bounds its DB wait (HikariCP's default is 30 s).
        hc.setConnectionTimeout(5_000);
        // Start even if the database is not up yet; /health answers 503 until it is.
        hc.setInitializationFailTimeout(-1);
        if (meterRegistry != null) {
            hc.setMetricRegistry(meterRegistry);
        }
        return hc;
    }

    @Override
    public void close() {
        dataSource.close();
    }
}
