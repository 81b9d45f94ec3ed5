package ceiling.spring.r2dbc;

import io.r2dbc.spi.Connection;
import io.r2dbc.spi.ConnectionFactory;
import io.r2dbc.spi.ValidationDepth;
import java.time.Duration;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import reactor.core.publisher.Mono;

/** ping workload (source 004): the database builds the JSON, the stack returns it verbatim. */
@Repository
public class PingRepository {
    private final DatabaseClient db;
    private final ConnectionFactory pool;

    public PingRepository(DatabaseClient db, ConnectionFactory pool) {
        this.db = db;
        this.pool = pool;
    }

    public Mono<String> dbPing() {
        return db.sql("SELECT json_build_object('ok', true, 'message', 'OK')::text")
                .map(row -> row.get(0, String.class))
                .one();
    }

    public Mono<String> dbTime() {
        return db.sql("SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text")
                .map(row -> row.get(0, String.class))
                .one();
    }

    /** For {@code /health}: can the pool hand out a live connection? */
    public Mono<Boolean> healthy() {
        return Mono.usingWhen(pool.create(),
                        connection -> Mono.from(connection.validate(ValidationDepth.REMOTE)),
                        Connection::close)
                .timeout(Duration.ofSeconds(5))
                .onErrorReturn(false);
    }
}
