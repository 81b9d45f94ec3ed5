// The benchmark API's routes (contract/API.md) as a Fastify plugin: JSON schemas validate bodies
// and serialize responses (fast-json-stringify), node-postgres does the SQL.

import { SQL, rfc3339 } from './db.js';

const MAX_BATCH_IDS = 50;
const MAX_BALANCE = (1n << 62n).toString();
const INT64 = { min: (-(1n << 63n)).toString(), max: ((1n << 63n) - 1n).toString() };
const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const INT_RE = /^-?[0-9]{1,19}$/;

export class ApiError extends Error {
  constructor(statusCode, code, message) {
    super(message);
    this.statusCode = statusCode;
    this.code = code;
  }
}
const badRequest = (m) => new ApiError(400, 'bad_request', m);
const notFound = (m) => new ApiError(404, 'not_found', m);
const conflict = (m) => new ApiError(409, 'conflict', m);

function parseUuid(s) {
  if (!UUID_RE.test(s)) throw badRequest(`${JSON.stringify(s)} is not a UUID (want the canonical 8-4-4-4-12 hex form)`);
  return s.toLowerCase();
}

function parseInt64(s, what) {
  if (INT_RE.test(s)) {
    const v = BigInt(s);
    if (v >= BigInt(INT64.min) && v <= BigInt(INT64.max)) return v;
  }
  throw badRequest(`${JSON.stringify(s)} is not ${what} (want a decimal 64-bit integer)`);
}

const statusDto = (r) => ({ id: r.id, status: r.status, updatedAt: rfc3339(r.updated_at) });

// ---- schemas: request bodies (strict: no type coercion, see server.js) and responses ----
const smallint = { type: 'integer', minimum: -32768, maximum: 32767 };
const statusOut = {
  type: 'object',
  properties: { id: { type: 'string' }, status: { type: 'integer' }, updatedAt: { type: 'string' } },
};
const clientOut = { type: 'object', properties: { id: { type: 'integer' }, balance: { type: 'integer' } } };

export default async function routes(app, { pool }) {
  // ---- status (source 000) ----
  app.get('/status/:id', { schema: { response: { 200: statusOut } } }, async (req) => {
    const { rows } = await pool.query(SQL.statusGet, [parseUuid(req.params.id)]);
    if (rows.length === 0) throw notFound('no status with this id');
    return statusDto(rows[0]);
  });

  app.get('/status', { schema: { response: { 200: { type: 'array', items: statusOut } } } }, async (req) => {
    const q = req.query.ids;
    const raw = Array.isArray(q) ? q.join(',') : (q ?? '');
    if (raw === '') throw badRequest(`ids: give 1 to ${MAX_BATCH_IDS} comma-separated UUIDs`);
    const parts = raw.split(',');
    if (parts.length > MAX_BATCH_IDS) throw badRequest(`ids: ${parts.length} ids given, at most ${MAX_BATCH_IDS} allowed`);
    const { rows } = await pool.query(SQL.statusGetMany, [parts.map(parseUuid)]);
    return rows.map(statusDto);
  });

  app.post(
    '/status',
    {
      schema: {
        body: { type: 'object', required: ['id', 'status'], properties: { id: { type: 'string' }, status: smallint } },
        response: { 201: statusOut },
      },
    },
    async (req, reply) => {
      const id = parseUuid(req.body.id);
      const { rows } = await pool.query(SQL.statusInsert, [id, req.body.status]);
      if (rows.length === 0) throw conflict('a status with this id already exists'); // ON CONFLICT DO NOTHING
      return reply.code(201).send(statusDto(rows[0]));
    },
  );

  app.put(
    '/status/:id',
    {
      schema: {
        body: { type: 'object', required: ['status'], properties: { status: smallint } },
        response: { 200: statusOut },
      },
      // the path's UUID is checked before the body, as the other stacks do
      preValidation: async (req) => {
        req.statusId = parseUuid(req.params.id);
      },
    },
    async (req) => {
      const { rows } = await pool.query(SQL.statusUpdate, [req.statusId, req.body.status]);
      if (rows.length === 0) throw notFound('no status with this id');
      return statusDto(rows[0]);
    },
  );

  // ---- bank (source 001) ----
  app.post(
    '/clients',
    {
      schema: {
        body: { type: 'object', required: ['balance'], properties: { balance: { int64: { min: '0', max: MAX_BALANCE } } } },
        response: { 201: clientOut },
      },
    },
    async (req, reply) => {
      const { rows } = await pool.query(SQL.clientInsert, [String(req.body.balance)]);
      return reply.code(201).send(rows[0]);
    },
  );

  app.get('/clients/:id/balance', { schema: { response: { 200: clientOut } } }, async (req) => {
    const id = parseInt64(req.params.id, 'a client id');
    const { rows } = await pool.query(SQL.clientBalance, [String(id)]);
    if (rows.length === 0) throw notFound('no client with this id');
    return rows[0];
  });

  app.post(
    '/transfers',
    {
      schema: {
        body: {
          type: 'object',
          required: ['from', 'to', 'amount'],
          properties: { from: { int64: INT64 }, to: { int64: INT64 }, amount: { int64: INT64 } },
        },
        response: {
          200: { type: 'object', properties: { from: { type: 'integer' }, to: { type: 'integer' }, amount: { type: 'integer' } } },
        },
      },
    },
    async (req) => {
      const from = BigInt(req.body.from);
      const to = BigInt(req.body.to);
      const amount = BigInt(req.body.amount);
      if (amount <= 0n) throw badRequest('field "amount" must be positive');
      if (from === to) throw badRequest('"from" and "to" must differ');
      const args = [String(from), String(to), String(amount)];
      // node-postgres' transaction idiom: one client, BEGIN … COMMIT, ROLLBACK on any error.
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const { rows } = await client.query(SQL.transferLock, args.slice(0, 2));
        if (rows.length < 2) throw notFound('unknown client');
        const balance = new Map(rows.map((r) => [r.id, r.balance]));
        if (balance.get(from) < amount) throw conflict('insufficient funds');
        if (balance.get(to) > BigInt(MAX_BALANCE) - amount) throw conflict("the payee's balance would exceed 2^62");
        await client.query(SQL.transferMove, args);
        await client.query(SQL.transferLog, args);
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK').catch(() => {});
        throw e;
      } finally {
        client.release();
      }
      return { from, to, amount };
    },
  );

  // ---- rows (sources 002, 003) ----
  const orderOut = {
    type: 'object',
    properties: {
      id: { type: 'integer' },
      customer: { type: 'string' },
      item: { type: 'string' },
      quantity: { type: 'integer' },
      priceCents: { type: 'integer' },
      createdAt: { type: 'string' },
    },
  };
  app.get('/orders', { schema: { response: { 200: { type: 'array', items: orderOut } } } }, async (req) => {
    const raw = req.query.limit;
    const limit = raw === undefined ? 10n : parseInt64(Array.isArray(raw) ? raw[0] : raw, 'a limit');
    if (limit < 1n || limit > 1000n) throw badRequest(`limit: ${limit} is outside 1…1000`);
    const { rows } = await pool.query(SQL.orders, [String(limit)]);
    return rows.map((r) => ({
      id: r.id,
      customer: r.customer,
      item: r.item,
      quantity: r.quantity,
      priceCents: r.price_cents,
      createdAt: rfc3339(r.created_at),
    }));
  });

  // ---- ping (source 004) ----
  const PING = '{"ok":true,"message":"OK"}';
  app.get('/ping', async (_req, reply) => reply.type('application/json').send(PING));
  app.get('/time', { schema: { response: { 200: { type: 'object', properties: { serverTime: { type: 'integer' } } } } } }, async () => ({
    serverTime: Math.floor(Date.now() / 1000),
  }));
  const text = async (sql) => (await pool.query({ text: sql, rowMode: 'array' })).rows[0][0];
  app.get('/db/ping', async (_req, reply) => reply.type('application/json').send(await text(SQL.dbPing)));
  app.get('/db/time', async (_req, reply) => reply.type('application/json').send(await text(SQL.dbTime)));
}
