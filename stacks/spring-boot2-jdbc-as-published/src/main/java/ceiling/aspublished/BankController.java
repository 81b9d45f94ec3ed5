package ceiling.aspublished;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.Map;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

/**
 * The bank as 2018 tutorial code wrote it with "only database drivers":
 *
 * <ul>
 *   <li>no pool: every request opens its own connection with {@link DriverManager} (a TCP
 *       connect, a PostgreSQL backend fork and authentication) and closes it;
 *   <li>a transfer is four statements in autocommit, not a transaction: the payer's balance is
 *       read and checked, then debited, then the payee credited, then the transfer logged —
 *       concurrent transfers from one payer can all pass the check, and a failure between the
 *       statements loses money;
 *   <li>a database error is an exception Spring turns into a 500 (unlike the Go service's
 *       log.Fatal, the process lives on: the source's Java advantage may be just that).
 * </ul>
 *
 * The source's missing index is applied to this stack's copy of the data by the stand
 * (stack.toml [database]).
 */
@RestController
public class BankController {
    private static final String URL = "jdbc:postgresql://" + env("DB_HOST", "127.0.0.1") + ":"
            + env("DB_PORT", "5432") + "/" + env("DB_NAME", "postgres");
    private static final String USER = env("DB_USER", "postgres");
    private static final String PASSWORD = env("DB_PASSWORD", "");

    private static String env(String key, String fallback) {
        String v = System.getenv(key);
        return v == null || v.isEmpty() ? fallback : v;
    }

    private static Connection connect() throws SQLException {
        return DriverManager.getConnection(URL, USER, PASSWORD);
    }

    private static ResponseEntity<Object> fail(HttpStatus status, String code, String message) {
        Map<String, String> body = new LinkedHashMap<>();
        body.put("error", code);
        body.put("message", message);
        return ResponseEntity.status(status).body(body);
    }

    private static Map<String, Long> client(long id, long balance) {
        Map<String, Long> c = new LinkedHashMap<>();
        c.put("id", id);
        c.put("balance", balance);
        return c;
    }

    /** Request body of POST /clients. */
    public static class NewClient {
        public Long balance;
    }

    /** Request body (and answer) of POST /transfers. */
    public static class Transfer {
        public long from;
        public long to;
        public long amount;
    }

    @PostMapping("/clients")
    public ResponseEntity<Object> newClient(@RequestBody NewClient req) throws SQLException {
        if (req.balance == null || req.balance < 0) {
            return fail(HttpStatus.BAD_REQUEST, "bad_request", "want {\"balance\": n >= 0}");
        }
        try (Connection c = connect();
                PreparedStatement st = c.prepareStatement(
                        "INSERT INTO clients (balance) VALUES (?) RETURNING id, balance")) {
            st.setLong(1, req.balance);
            try (ResultSet rs = st.executeQuery()) {
                rs.next();
                return ResponseEntity.status(HttpStatus.CREATED).body(client(rs.getLong(1), rs.getLong(2)));
            }
        }
    }

    @GetMapping("/clients/{id}/balance")
    public ResponseEntity<Object> balance(@PathVariable long id) throws SQLException {
        try (Connection c = connect();
                PreparedStatement st = c.prepareStatement("SELECT id, balance FROM clients WHERE id = ?")) {
            st.setLong(1, id);
            try (ResultSet rs = st.executeQuery()) {
                if (!rs.next()) {
                    return fail(HttpStatus.NOT_FOUND, "not_found", "no client with this id");
                }
                return ResponseEntity.ok(client(rs.getLong(1), rs.getLong(2)));
            }
        }
    }

    @PostMapping("/transfers")
    public ResponseEntity<Object> transfer(@RequestBody Transfer t) throws SQLException {
        if (t.amount <= 0 || t.from == t.to) {
            return fail(HttpStatus.BAD_REQUEST, "bad_request", "want {\"from\", \"to\" (different), \"amount\" > 0}");
        }
        try (Connection c = connect()) {
            Long payer = balanceOf(c, t.from);
            if (payer == null || balanceOf(c, t.to) == null) {
                return fail(HttpStatus.NOT_FOUND, "not_found", "no client with this id");
            }
            if (payer < t.amount) {
                return fail(HttpStatus.CONFLICT, "conflict", "the payer's balance is below the amount");
            }
            update(c, "UPDATE clients SET balance = balance - ? WHERE id = ?", t.amount, t.from);
            update(c, "UPDATE clients SET balance = balance + ? WHERE id = ?", t.amount, t.to);
            update(c, "INSERT INTO transfers (from_id, to_id, amount) VALUES (?, ?, ?)", t.from, t.to, t.amount);
            return ResponseEntity.ok(t);
        }
    }

    private static Long balanceOf(Connection c, long id) throws SQLException {
        try (PreparedStatement st = c.prepareStatement("SELECT balance FROM clients WHERE id = ?")) {
            st.setLong(1, id);
            try (ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getLong(1) : null;
            }
        }
    }

    private static void update(Connection c, String sql, long... args) throws SQLException {
        try (PreparedStatement st = c.prepareStatement(sql)) {
            for (int i = 0; i < args.length; i++) {
                st.setLong(i + 1, args[i]);
            }
            st.executeUpdate();
        }
    }

    /** ceiling's contract (the source had none): ready when a connection of its own answers. */
    @GetMapping("/health")
    public ResponseEntity<Object> health() {
        try (Connection c = connect()) {
            return ResponseEntity.ok(Map.of("status", "UP"));
        } catch (SQLException e) {
            return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE).body(Map.of("status", "DOWN"));
        }
    }
}
