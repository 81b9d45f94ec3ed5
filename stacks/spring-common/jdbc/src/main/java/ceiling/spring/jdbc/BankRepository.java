package ceiling.spring.jdbc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ClientDto;
import ceiling.spring.api.TransferDto;
import java.util.List;
import java.util.Optional;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.annotation.Transactional;

/** bank workload (source 001, made sound): the transfer is one transaction, rows locked in id order. */
@Repository
public class BankRepository {
    private static final RowMapper<ClientDto> ROW = (rs, n) -> new ClientDto(rs.getLong("id"), rs.getLong("balance"));

    private final JdbcTemplate jdbc;

    public BankRepository(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public ClientDto create(long balance) {
        return jdbc.queryForObject("INSERT INTO clients (balance) VALUES (?) RETURNING id, balance", ROW, balance);
    }

    public Optional<ClientDto> find(long id) {
        List<ClientDto> rows = jdbc.query("SELECT id, balance FROM clients WHERE id = ?", ROW, id);
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
    }

    /**
     * BEGIN; lock both rows; check; move the money; record it; COMMIT. An {@link ApiException}
     * (404 unknown client, 409 insufficient funds) or any other error rolls the transaction back.
     */
    @Transactional
    public TransferDto transfer(TransferDto t) {
        List<ClientDto> rows = jdbc.query(
                "SELECT id, balance FROM clients WHERE id IN (?, ?) ORDER BY id FOR UPDATE", ROW, t.from(), t.to());
        if (rows.size() < 2) {
            throw ApiException.notFound("unknown client in transfer " + t.from() + " -> " + t.to());
        }
        ClientDto payer = rows.get(0).id() == t.from() ? rows.get(0) : rows.get(1);
        if (payer.balance() < t.amount()) {
            throw ApiException.conflict("insufficient funds in client " + t.from());
        }
        // The contract's $1..$3 appear more than once; JDBC binds each ? separately.
        jdbc.update("UPDATE clients SET balance = balance + CASE WHEN id = ? THEN -?::bigint ELSE ?::bigint END WHERE id IN (?, ?)",
                t.from(), t.amount(), t.amount(), t.from(), t.to());
        jdbc.update("INSERT INTO transfers (from_id, to_id, amount) VALUES (?, ?, ?)", t.from(), t.to(), t.amount());
        return t;
    }
}
