import type { Context } from 'hono';
import { z } from 'zod';
import { AppError, ValidationError } from '../core/errors.js';
import { nulFields } from './nul-characters.js';

const uuidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A path parameter that must be a UUID; anything else is a 400 naming the parameter. */
export function uuidParam(context: Context, name: string): string {
  const value = context.req.param(name) ?? '';
  if (!uuidPattern.test(value)) throw ValidationError.field(name, `must be a UUID, got "${value.slice(0, 64)}"`);
  return value.toLowerCase();
}

export const uuid = z.string().regex(uuidPattern, 'must be a UUID').transform((value) => value.toLowerCase());

/** Reads a JSON body and checks it against `schema`; every problem is named by its field. */
export async function readJson<Schema extends z.ZodType>(context: Context, schema: Schema): Promise<z.output<Schema>> {
  return parseJsonBody(await context.req.text(), schema);
}

/** A JSON body's text checked against `schema`, refused as `readJson` refuses it (the card thread reads one too). */
export function parseJsonBody<Schema extends z.ZodType>(text: string, schema: Schema): z.output<Schema> {
  let body: unknown;
  if (text.trim() === '') {
    body = {};
  } else {
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw ValidationError.field('body', `is not valid JSON (${(error as Error).message})`);
    }
  }
  refuseNul(body, '', 'body');
  return check(schema, body, '');
}

/** Checks query parameters against `schema`. */
export function readQuery<Schema extends z.ZodType>(context: Context, schema: Schema): z.output<Schema> {
  const query = context.req.query();
  refuseNul(query, 'query.', 'query');
  return check(schema, query, 'query.');
}

/** Text holding a NUL (U+0000) anywhere is refused before the schema reads it. */
function refuseNul(value: unknown, prefix: string, rootName: string): void {
  const issues = nulFields(value, prefix, rootName);
  if (issues.length > 0) throw new ValidationError(issues);
}

function check<Schema extends z.ZodType>(schema: Schema, value: unknown, prefix: string): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw new ValidationError(
    result.error.issues.flatMap((issue) => {
      const path = issue.path.map(String);
      // An unknown member is named as a field of its own, like any other mistake.
      if (issue.code === 'unrecognized_keys') {
        return issue.keys.map((key) => ({ field: prefix + [...path, key].join('.'), message: 'is not a known field' }));
      }
      return [{ field: path.length > 0 ? prefix + path.join('.') : prefix ? prefix.slice(0, -1) : 'body', message: issue.message }];
    }),
  );
}

export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(32).optional(),
});

const dataUrlPattern = /^data:([\w.+-]+\/[\w.+-]+)?(;[\w-]+=[^;,]*)*;base64,/i;
const base64Pattern = /^[A-Za-z0-9+/_-]*={0,2}$/;

/**
 * The bytes of a field sent as base64 (standard or URL-safe) or as a `data:` URL; the
 * core then checks what they are. `what` names the expected content in the error.
 */
export function decodeBase64(field: string, data: string, what: string): Buffer {
  let payload = data.trim();
  const dataUrl = dataUrlPattern.exec(payload);
  if (dataUrl) payload = payload.slice(dataUrl[0].length);
  payload = payload.replace(/\s+/g, '');
  if (payload.length === 0 || !base64Pattern.test(payload)) {
    throw ValidationError.field(field, `must be base64 or a data: URL of ${what}`);
  }
  return Buffer.from(payload, 'base64');
}

/** Base64 of `maxBytes`, with room for a data: URL's head and line breaks every 76 characters. */
export function refuseLongerThan(data: string, maxBytes: number, what: string): void {
  const encoded = Math.ceil(maxBytes / 3) * 4;
  if (data.length <= encoded + Math.ceil(encoded / 38) + 256) return;
  throw new AppError('PAYLOAD_TOO_LARGE', `The ${what} is larger than ${Math.floor(maxBytes / (1024 * 1024))} MB; send a smaller one.`, {
    details: { field: 'data', maxBytes },
  });
}
