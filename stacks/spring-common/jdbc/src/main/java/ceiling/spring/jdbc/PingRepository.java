package ceiling.spring.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Repository;

/** ping workload (source 004): the database builds the JSON, the stack returns it verbatim. */
@Repository
public class PingRepository {
    private final JdbcTemplate jdbc;
    private final DataSource dataSource;

    public PingRepository(JdbcTemplate jdbc, DataSource dataSource) {
        this.jdbc = jdbc;
        this.dataSource = dataSource;
    }

    public String dbPing() {
        return jdbc.queryForObject("SELECT json_build_object('ok', true, 'message', 'OK')::text", String.class);
    }

    public String dbTime() {
        return jdbc.queryForObject("SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text", String.class);
    }

    /** For {@code /health}: can the pool hand out a live connection? */
    public boolean healthy() {
        try (Connection connection = dataSource.getConnection()) {
            return connection.isValid(2);
        } catch (SQLException | RuntimeException e) {
            return false;
        }
    }
}
