// The Fastify instance: strict JSON bodies, the contract's error shape, /health and /metrics.

import Fastify from 'fastify';
import client from 'prom-client';
import { createPool } from './db.js';
import { MAX_BODY_BYTES, parseJson, int64Keyword } from './json.js';
import routes, { ApiError } from './routes.js';

const CODES = { 404: 'not_found', 405: 'method_not_allowed', 413: 'payload_too_large', 415: 'unsupported_media_type' };

function errorBody(statusCode, code, message) {
  return { statusCode, body: { error: code, message } };
}

/** Maps any error to the contract's {"error","message"} and a status code. */
export function toContract(e) {
  if (e instanceof ApiError) return errorBody(e.statusCode, e.code, e.message);
  if (e.validation) return errorBody(400, 'bad_request', e.message);
  if (e.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
    return errorBody(415, 'unsupported_media_type', 'Content-Type must be application/json');
  }
  if (e.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
    return errorBody(413, 'payload_too_large', `request body is larger than ${MAX_BODY_BYTES} bytes`);
  }
  if (e.statusCode >= 400 && e.statusCode < 500) return errorBody(e.statusCode, CODES[e.statusCode] ?? 'bad_request', e.message);
  if (/timeout/i.test(e.message ?? '')) return errorBody(503, 'timeout', 'the database did not answer in time');
  return errorBody(500, 'internal_error', 'internal error');
}

export function buildApp(cfg) {
  const pool = createPool(cfg);
  const app = Fastify({
    logger: false, // no request logging on the measured path
    bodyLimit: MAX_BODY_BYTES,
    ajv: {
      // Strict bodies: Fastify's default ajv coerces "1" to 1 and true to 1; the contract says 400.
      customOptions: { coerceTypes: false, removeAdditional: false, useDefaults: false },
      plugins: [int64Keyword],
    },
  });

  // JSON only: Fastify also parses text/plain by default, which the contract answers with 415.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: MAX_BODY_BYTES }, parseJson);

  // A body without any Content-Type is 415 as well (Fastify would leave it unparsed).
  app.addHook('onRequest', async (req) => {
    if ((req.method === 'POST' || req.method === 'PUT') && !req.headers['content-type']) {
      throw new ApiError(415, 'unsupported_media_type', 'Content-Type must be application/json');
    }
  });

  app.setErrorHandler((e, req, reply) => {
    const { statusCode, body } = toContract(e);
    if (statusCode >= 500) req.log.error(e);
    reply.code(statusCode).type('application/json').send(JSON.stringify(body));
  });
  app.setNotFoundHandler((_req, reply) => {
    reply.code(404).type('application/json').send(JSON.stringify({ error: 'not_found', message: 'no such route' }));
  });

  app.register(routes, { pool });

  app.get('/health', async (_req, reply) => {
    try {
      await pool.query('SELECT 1');
      return { status: 'UP' };
    } catch (e) {
      return reply.code(503).send({ error: 'unavailable', message: `database unreachable: ${e.message}` });
    }
  });

  // prom-client's default metrics (process CPU, memory, event-loop lag) of the worker that answers.
  client.collectDefaultMetrics();
  new client.Gauge({ name: 'db_pool_connections', help: 'Connections in this worker pool', collect() { this.set(pool.totalCount); } });
  new client.Gauge({ name: 'db_pool_idle_connections', help: 'Idle connections in this worker pool', collect() { this.set(pool.idleCount); } });
  app.get('/metrics', async (_req, reply) => reply.type(client.register.contentType).send(await client.register.metrics()));

  app.addHook('onClose', async () => pool.end());
  return app;
}
