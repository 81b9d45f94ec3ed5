package ceiling.spring.r2dbc;

import ceiling.spring.api.NewStatus;
import ceiling.spring.api.StatusDto;
import io.r2dbc.spi.Readable;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** status workload (source 000) over DatabaseClient + r2dbc-pool; one statement per call. */
@Repository
public class StatusRepository {
    private final DatabaseClient db;

    public StatusRepository(DatabaseClient db) {
        this.db = db;
    }

    private static StatusDto row(Readable row) {
        return new StatusDto(row.get("id", UUID.class), row.get("status", Short.class), row.get("updated_at", Instant.class));
    }

    public Mono<StatusDto> findById(UUID id) {
        return db.sql("SELECT id, status, updated_at FROM status WHERE id = $1")
                .bind(0, id)
                .map(StatusRepository::row)
                .one();
    }

    public Flux<StatusDto> findByIds(List<UUID> ids) {
        return db.sql("SELECT id, status, updated_at FROM status WHERE id = ANY($1) ORDER BY id")
                .bind(0, ids.toArray(new UUID[0]))
                .map(StatusRepository::row)
                .all();
    }

    /** Empty when the id exists already (409). */
    public Mono<StatusDto> insert(NewStatus status) {
        return db.sql("INSERT INTO status (id, status) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at")
                .bind(0, status.id())
                .bind(1, status.status())
                .map(StatusRepository::row)
                .one();
    }

    /** Empty when the id does not exist (404). */
    public Mono<StatusDto> update(UUID id, short status) {
        return db.sql("UPDATE status SET status = $2, updated_at = now() WHERE id = $1 RETURNING id, status, updated_at")
                .bind(0, id)
                .bind(1, status)
                .map(StatusRepository::row)
                .one();
    }
}
