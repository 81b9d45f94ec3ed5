package ceiling.helidon;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.OptionalLong;

import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

import ceiling.helidon.Dtos.ErrorBody;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * Request bodies and query strings, in the contract's order: Content-Type must be application/json
 * (parameters such as charset allowed) → 415; then the size → 413; then the syntax and shape → 400.
 */
final class Http {
    /** The contract's request body limit: 64 KiB; larger is 413. */
    static final int MAX_BODY_BYTES = 64 * 1024;

    /**
     * The one ObjectMapper: Helidon's JacksonSupport writes responses with it (Main), and request
     * bodies are parsed with it here. Jackson's parser is strict JSON (no comments, unquoted names,
     * single quotes, leading zeros, NaN, trailing commas); FAIL_ON_TRAILING_TOKENS rejects data after
     * the value; nesting is capped by Jackson's StreamReadConstraints (1000 levels by default).
     */
    static final ObjectMapper MAPPER = JsonMapper.builder()
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
            .build();

    private Http() {
    }

    /**
     * The request body as a JSON object. Read here rather than through {@code content().as(…)} so
     * that the 64 KiB cap holds for chunked bodies too (at most one byte more than the limit is read)
     * and so that every failure is a 4xx with the contract's error body.
     */
    static ObjectNode jsonObject(ServerRequest req) {
        String ct = req.headers().first(HeaderNames.CONTENT_TYPE).orElse(null);
        if (ct == null) {
            throw ApiException.unsupportedMediaType("Content-Type must be application/json");
        }
        int semi = ct.indexOf(';');
        String mime = (semi < 0 ? ct : ct.substring(0, semi)).trim();
        if (!mime.equalsIgnoreCase("application/json")) {
            throw ApiException.unsupportedMediaType("Content-Type must be application/json, not \"" + ct + "\"");
        }
        OptionalLong length;
        try {
            length = req.headers().contentLength();
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("bad Content-Length");
        }
        if (length.isPresent() && length.getAsLong() > MAX_BODY_BYTES) {
            throw ApiException.payloadTooLarge();
        }
        byte[] body;
        if (!req.content().hasEntity()) {
            body = new byte[0];
        } else {
            try (InputStream in = req.content().inputStream()) {
                body = in.readNBytes(MAX_BODY_BYTES + 1);
            } catch (IOException | RuntimeException e) {
                throw ApiException.badRequest("cannot read the request body: " + e.getMessage());
            }
        }
        if (body.length > MAX_BODY_BYTES) {
            throw ApiException.payloadTooLarge();
        }
        JsonNode node;
        try {
            node = MAPPER.readTree(body);
        } catch (JacksonException e) {
            throw ApiException.badRequest("malformed JSON body: " + e.getOriginalMessage());
        } catch (IOException e) {
            throw ApiException.badRequest("malformed JSON body: " + e.getMessage());
        }
        if (node == null || node.isMissingNode()) {
            throw ApiException.badRequest("malformed JSON body: empty");
        }
        if (!(node instanceof ObjectNode obj)) {
            throw ApiException.badRequest("request body must be a JSON object");
        }
        return obj;
    }

    /**
     * An error answer: {@code {"error","message"}}, serialized here rather than by the media
     * writers so that it is JSON whatever the request's Accept says (a failed negotiation must not
     * turn the error itself into Helidon's plain-text fallback).
     */
    static void sendError(ServerResponse res, Status status, String code, String message) {
        byte[] body;
        try {
            body = MAPPER.writeValueAsBytes(new ErrorBody(code, message));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
        res.status(status).header(HeaderValues.CONTENT_TYPE_JSON).send(body);
    }

    /** All values of query parameter {@code name} (null when absent); a query that does not decode is 400. */
    static List<String> queryAll(ServerRequest req, String name) {
        try {
            var query = req.query();
            return query.contains(name) ? query.all(name) : null;
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("malformed query string: " + e.getMessage());
        }
    }

    /** The path parameter {@code name}, decoded. */
    static String pathParam(ServerRequest req, String name) {
        try {
            return req.path().pathParameters().get(name);
        } catch (IllegalArgumentException e) {
            throw ApiException.badRequest("malformed path: " + e.getMessage());
        }
    }
}
