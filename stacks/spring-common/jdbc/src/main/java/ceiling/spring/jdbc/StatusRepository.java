package ceiling.spring.jdbc;

import ceiling.spring.api.NewStatus;
import ceiling.spring.api.StatusDto;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Repository;

/** status workload (source 000) over JdbcTemplate + HikariCP; one statement per call. */
@Repository
public class StatusRepository {
    private static final RowMapper<StatusDto> ROW = (rs, n) -> new StatusDto(
            rs.getObject("id", UUID.class),
            rs.getShort("status"),
            rs.getObject("updated_at", OffsetDateTime.class).toInstant());

    private final JdbcTemplate jdbc;

    public StatusRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public Optional<StatusDto> findById(UUID id) {
        return first(jdbc.query("SELECT id, status, updated_at FROM status WHERE id = ?", ROW, id));
    }

    public List<StatusDto> findByIds(List<UUID> ids) {
        return jdbc.query("SELECT id, status, updated_at FROM status WHERE id = ANY(?) ORDER BY id",
                ps -> ps.setArray(1, ps.getConnection().createArrayOf("uuid", ids.toArray())),
                ROW);
    }

    /** Empty when the id exists already (409). */
    public Optional<StatusDto> insert(NewStatus status) {
        return first(jdbc.query(
                "INSERT INTO status (id, status) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id, status, updated_at",
                ROW, status.id(), status.status()));
    }

    /** Empty when the id does not exist (404). */
    public Optional<StatusDto> update(UUID id, short status) {
        return first(jdbc.query(
                "UPDATE status SET status = ?, updated_at = now() WHERE id = ? RETURNING id, status, updated_at",
                ROW, status, id));
    }

    private static <T> Optional<T> first(List<T> rows) {
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
    }
}
