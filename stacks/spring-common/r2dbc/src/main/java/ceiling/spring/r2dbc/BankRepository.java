package ceiling.spring.r2dbc;

import ceiling.spring.api.ApiException;
import ceiling.spring.api.ClientDto;
import ceiling.spring.api.TransferDto;
import io.r2dbc.spi.Readable;
import org.springframework.r2dbc.core.DatabaseClient;
import org.springframework.stereotype.Repository;
import org.springframework.transaction.reactive.TransactionalOperator;
import reactor.core.publisher.Mono;

/** bank workload (source 001, made sound): the transfer is one transaction, rows locked in id order. */
@Repository
public class BankRepository {
    private final DatabaseClient db;
    private final TransactionalOperator tx;

    public BankRepository(DatabaseClient db, TransactionalOperator tx) {
        this.db = db;
        this.tx = tx;
    }

    private static ClientDto row(Readable row) {
        return new ClientDto(row.get("id", Long.class), row.get("balance", Long.class));
    }

    public Mono<ClientDto> create(long balance) {
        return db.sql("INSERT INTO clients (balance) VALUES ($1) RETURNING id, balance")
                .bind(0, balance)
                .map(BankRepository::row)
                .one();
    }

    public Mono<ClientDto> find(long id) {
        return db.sql("SELECT id, balance FROM clients WHERE id = $1")
                .bind(0, id)
                .map(BankRepository::row)
                .one();
    }

    /**
     * BEGIN; lock both rows; check; move the money; record it; COMMIT, all on one connection held by
     * the {@link TransactionalOperator}. An error signal ({@link ApiException} 404/409 or any other)
     * rolls the transaction back.
     */
    public Mono<TransferDto> transfer(TransferDto t) {
        Mono<TransferDto> work = db.sql("SELECT id, balance FROM clients WHERE id IN ($1, $2) ORDER BY id FOR UPDATE")
                .bind(0, t.from())
                .bind(1, t.to())
                .map(BankRepository::row)
                .all()
                .collectList()
                .flatMap(rows -> {
                    if (rows.size() < 2) {
                        return Mono.error(ApiException.notFound("unknown client in transfer " + t.from() + " -> " + t.to()));
                    }
                    ClientDto payer = rows.get(0).id() == t.from() ? rows.get(0) : rows.get(1);
                    if (payer.balance() < t.amount()) {
                        return Mono.error(ApiException.conflict("insufficient funds in client " + t.from()));
                    }
                    return db.sql("UPDATE clients SET balance = balance + CASE WHEN id = $1 THEN -$3::bigint ELSE $3::bigint END WHERE id IN ($1, $2)")
                            .bind(0, t.from())
                            .bind(1, t.to())
                            .bind(2, t.amount())
                            .then()
                            .then(db.sql("INSERT INTO transfers (from_id, to_id, amount) VALUES ($1, $2, $3)")
                                    .bind(0, t.from())
                                    .bind(1, t.to())
                                    .bind(2, t.amount())
                                    .then())
                            .thenReturn(t);
                });
        return tx.transactional(work);
    }
}
