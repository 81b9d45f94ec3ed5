package ceiling.helidon;

import java.nio.charset.StandardCharsets;

import io.helidon.http.HeaderValues;
import io.helidon.webserver.http.HttpRules;
import io.helidon.webserver.http.HttpService;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.PingDto;
import ceiling.helidon.Dtos.TimeDto;
import org.jdbi.v3.core.Jdbi;

/** ping workload (source 004): exact bodies and SQL. */
final class PingService implements HttpService {
    static final String SQL_DB_PING = "SELECT json_build_object('ok', true, 'message', 'OK')::text";
    static final String SQL_DB_TIME = "SELECT json_build_object('serverTime', extract(epoch from now())::integer)::text";

    private static final PingDto PONG = new PingDto(true, "OK");

    private final Jdbi jdbi;

    PingService(Jdbi jdbi) {
        this.jdbi = jdbi;
    }

    @Override
    public void routing(HttpRules rules) {
        rules.get("/ping", (req, res) -> res.send(PONG))
                .get("/time", (req, res) -> res.send(new TimeDto(System.currentTimeMillis() / 1000)))
                .get("/db/ping", (req, res) -> sendText(res, SQL_DB_PING))
                .get("/db/time", (req, res) -> sendText(res, SQL_DB_TIME));
    }

    /**
     * The one text value the query returns, verbatim, as JSON. Sent as bytes: a String entity would
     * go through the media writers, and Jackson's would quote it.
     */
    private void sendText(ServerResponse res, String sql) {
        String text = jdbi.withHandle(h -> h.createQuery(sql).mapTo(String.class).one());
        res.header(HeaderValues.CONTENT_TYPE_JSON).send(text.getBytes(StandardCharsets.UTF_8));
    }
}
