// JSON bodies with exact 64-bit integers. JSON.parse turns 4611686018427387905 into
// 4611686018427387904 (a double), so "balance ≤ 2^62" could not be checked; lossless-json keeps
// the literal, and integers past 2^53 become BigInt. An ajv keyword, `int64`, then checks
// integer-ness and range on Number or BigInt alike.

import { parse, isInteger, isSafeNumber } from 'lossless-json';

export const MAX_BODY_BYTES = 64 * 1024;

function number(text) {
  if (isSafeNumber(text)) return Number(text);
  if (isInteger(text)) return BigInt(text);
  return Number(text); // a fraction or an exponent: not an integer, rejected by the schema
}

/** Fastify content-type parser for application/json. */
export function parseJson(_request, body, done) {
  try {
    done(null, parse(body, null, number));
  } catch (e) {
    e.statusCode = 400;
    e.code = 'BAD_JSON';
    e.message = `malformed JSON: ${e.message}`;
    done(e, undefined);
  }
}

/** ajv plugin: { int64: { min: "0", max: "4611686018427387904" } } on a Number or a BigInt. */
export function int64Keyword(ajv) {
  ajv.addKeyword({
    keyword: 'int64',
    errors: false,
    validate(range, data) {
      let v;
      if (typeof data === 'bigint') v = data;
      else if (typeof data === 'number' && Number.isInteger(data)) v = BigInt(data);
      else return false;
      return v >= BigInt(range.min) && v <= BigInt(range.max);
    },
  });
  return ajv;
}
