/**
 * The HTTP side: `/api/v10` REST with Discord's authentication, rate-limit headers and JSON
 * error bodies; `/cdn` and `/media` serving uploaded files and avatars; WebSocket upgrades on
 * `/gateway`. Every REST request is recorded with its route template for tests and benchmarks.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { UploadedFile } from './attachments.js';
import type { FakeContext } from './context.js';
import { DiscordHttpError, entityTooLarge, invalidJson, methodNotAllowed, notFound, serverError, unauthorized, type ServerErrorAnswer } from './errors.js';
import type { FakeGateway } from './gateway.js';
import type { RateLimiter } from './rate-limiter.js';
import type { RouteAnswer, RouteMatch, RouteRequest, Router } from './router.js';
import { serveCdn } from './cdn.js';

/** A REST request as the fake saw it. */
export interface RecordedRequest {
  method: string;
  /** `METHOD /template` (e.g. `PATCH /channels/{channel.id}/messages/{message.id}`); null if no route matched. */
  route: string | null;
  /** The decoded path under `/api/v10`. */
  path: string;
  query: URLSearchParams;
  /** Parsed JSON, or multipart `payload_json`. */
  body: unknown;
  files: Array<{ field: string; filename: string; size: number; contentType: string }>;
  status: number;
  /** Arrival on the fake's clock, epoch ms. */
  timestamp: number;
  /** Time spent answering, including injected latency. */
  durationMs: number;
  /** The request carried the bot token (and counted against its global limit). */
  authenticated: boolean;
}

/**
 * A server error to answer instead of the route, e.g. a 503 from `/gateway/bot` during an
 * outage: 500 with Discord's JSON body, 502/503/504 with Cloudflare's HTML page.
 */
export interface ForcedServerError {
  /** `METHOD /template`, as in `RecordedRequest.route`, e.g. `GET /gateway/bot`. */
  route: string;
  status: number;
  /** How many matching requests fail, then the route answers normally; without it, every one until `clearServerErrors`. */
  count?: number;
}

export interface HttpServerDependencies {
  context: FakeContext;
  router: Router;
  limiter: RateLimiter;
  gateway: FakeGateway;
  latencyMs: number;
  /** Consumed in order by matching requests (see `FakeDiscord.forceServerError`). */
  serverErrors: ForcedServerError[];
  record(request: RecordedRequest): void;
}

/** Bodies past this are refused before parsing (Discord's edge refuses them too). */
const MAX_BODY_BYTES = 120 * 1024 * 1024;

async function readBody(request: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  return size > MAX_BODY_BYTES ? null : Buffer.concat(chunks);
}

async function parseBody(contentType: string, raw: Buffer): Promise<{ body: unknown; files: UploadedFile[] }> {
  if (raw.length === 0) return { body: undefined, files: [] };
  if (contentType.startsWith('multipart/form-data')) {
    const form = await new Request('http://127.0.0.1/', { method: 'POST', headers: { 'content-type': contentType }, body: raw }).formData();
    const files: UploadedFile[] = [];
    let body: unknown;
    for (const [field, value] of form.entries()) {
      if (typeof value === 'string') {
        if (field === 'payload_json') body = parseJson(value);
        continue;
      }
      files.push({ field, filename: value.name, contentType: value.type, bytes: Buffer.from(await value.arrayBuffer()) });
    }
    return { body, files };
  }
  return { body: parseJson(raw.toString('utf8')), files: [] };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidJson();
  }
}

function send(response: ServerResponse, status: number, headers: Record<string, string>, body: unknown): void {
  if (status === 204 || body === undefined) {
    response.writeHead(status, headers).end();
    return;
  }
  const text = JSON.stringify(body);
  response.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
}

/** Creates the server; the caller listens on 127.0.0.1. */
export function createHttpServer(dependencies: HttpServerDependencies): Server {
  const server = createServer((request, response) => {
    handle(dependencies, request, response).catch((error: unknown) => {
      console.error('fake Discord: request handling failed', error);
      if (!response.headersSent) send(response, 500, {}, { message: '500: Internal Server Error', code: 0 });
    });
  });
  server.on('upgrade', (request, socket, head: Buffer) => {
    if ((request.url ?? '').startsWith('/gateway')) dependencies.gateway.handleUpgrade(request, socket, head);
    else socket.destroy();
  });
  return server;
}

async function handle(dependencies: HttpServerDependencies, request: IncomingMessage, response: ServerResponse): Promise<void> {
  const started = performance.now();
  const { context } = dependencies;
  const url = new URL(request.url ?? '/', 'http://127.0.0.1');
  if (!url.pathname.startsWith('/api/')) {
    serveCdn(context, url, response);
    return;
  }
  const method = (request.method ?? 'GET').toUpperCase();
  const timestamp = context.state.clock();
  const segments = url.pathname.split('/').slice(1).map((segment) => {
    try {
      return decodeURIComponent(segment);
    } catch {
      return segment;
    }
  });
  // ['api', 'v10', ...rest]
  const path = `/${segments.slice(2).join('/')}`;
  const match = segments[1] === 'v10' ? dependencies.router.match(method, segments.slice(2), context) : null;
  const record: RecordedRequest = { method, route: null, path, query: url.searchParams, body: undefined, files: [], status: 0, timestamp, durationMs: 0, authenticated: false };
  const raw = await readBody(request);
  let headers: Record<string, string> = {};
  let answer: RouteAnswer | ServerErrorAnswer;
  try {
    if (raw === null) throw entityTooLarge();
    if (match === null) throw notFound();
    if (match === 'method-not-allowed') throw methodNotAllowed();
    record.route = match.name;
    const forced = dependencies.serverErrors.find((rule) => rule.route === match.name && (rule.count === undefined || rule.count > 0));
    if (forced !== undefined) {
      if (forced.count !== undefined) forced.count -= 1;
      answer = serverError(forced.status);
    } else {
      const token = authenticate(match, request, context.token);
      record.authenticated = token !== null;
      const parsed = await parseBody(request.headers['content-type'] ?? '', raw);
      record.body = parsed.body;
      record.files = parsed.files.map((file) => ({ field: file.field, filename: file.filename, size: file.bytes.length, contentType: file.contentType }));
      const verdict = dependencies.limiter.check({ method, route: match.name, bucket: match.route.bucket, majorParameter: match.majorParameter, token, ip: request.socket.remoteAddress ?? 'unknown' });
      headers = verdict.headers;
      if (verdict.refusal !== null) {
        answer = { status: 429, body: verdict.refusal };
      } else {
        answer = match.route.handle(routeRequest(match, url.searchParams, parsed.body, parsed.files), context);
      }
    }
  } catch (error) {
    if (!(error instanceof DiscordHttpError)) throw error;
    answer = { status: error.status, body: error.body };
  }
  if (dependencies.latencyMs > 0) await sleep(dependencies.latencyMs);
  if ('text' in answer) response.writeHead(answer.status, { 'content-type': answer.contentType, 'content-length': Buffer.byteLength(answer.text) }).end(answer.text);
  else send(response, answer.status, headers, answer.body);
  record.status = answer.status;
  record.durationMs = performance.now() - started;
  dependencies.record(record);
}

/**
 * The bot token the request counts against: required on authenticated routes (401 when missing or
 * wrong). Routes that need none (webhooks, interaction callbacks) still take one: Discord then
 * checks it and counts the request against the token's global limit instead of the address's
 * (discord-api-docs#4142, twilight#752); a wrong one is refused like anywhere else.
 */
function authenticate(match: RouteMatch, request: IncomingMessage, token: string): string | null {
  const header = request.headers.authorization;
  if (!match.route.auth && (header === undefined || header === '')) return null;
  if (header !== `Bot ${token}`) throw unauthorized();
  return token;
}

function routeRequest(match: RouteMatch, query: URLSearchParams, body: unknown, files: UploadedFile[]): RouteRequest {
  return {
    param(name: string, fallback?: string): string {
      const value = match.params.get(name) ?? fallback;
      if (value === undefined) throw new Error(`fake Discord: route ${match.name} has no parameter ${name}`);
      return value;
    },
    query,
    body,
    files,
  };
}
