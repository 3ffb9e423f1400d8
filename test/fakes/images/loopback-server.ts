/**
 * What the fake image engines share: a `node:http` server on 127.0.0.1, a record of every
 * request, and scripted misbehaviour for the next matching requests (a stall, or a given
 * answer such as a 429 with `retry-after`) before the engine's own handler sees them.
 */
import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The parsed body when it was JSON. */
  json?: unknown;
}

/** Which requests a script applies to; both parts optional. */
export interface RequestMatch {
  method?: string;
  path?: string | RegExp;
}

export interface ScriptedAnswer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

export type FakeHandler = (request: RecordedRequest, response: ServerResponse) => Promise<void> | void;

export interface LoopbackServer {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  /** The underlying server, for callers that watch requests themselves (benchmarks). */
  readonly server: Server;
  readonly requests: RecordedRequest[];
  /** The next `times` matching requests are accepted and never answered, not even headers. */
  stall(match: RequestMatch, times?: number): void;
  /** The next `times` matching requests get `answer` instead of the engine's. */
  answerNext(match: RequestMatch, answer: ScriptedAnswer, times?: number): void;
  /** Drops every script not yet used up, so one test's leftovers cannot reach the next. */
  clearScripts(): void;
  close(): Promise<void>;
}

interface Script {
  match: RequestMatch;
  action: 'stall' | ScriptedAnswer;
  remaining: number;
}

function matches(match: RequestMatch, request: RecordedRequest): boolean {
  if (match.method !== undefined && match.method !== request.method) return false;
  if (match.path === undefined) return true;
  return typeof match.path === 'string' ? match.path === request.path : match.path.test(request.path);
}

/** Starts a server on 127.0.0.1 whose answers come from `handle` unless a script says otherwise. */
export async function startLoopbackServer(handle: FakeHandler): Promise<LoopbackServer> {
  const server = createServer();
  const address = await new Promise<AddressInfo>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)));
  const requests: RecordedRequest[] = [];
  const scripts: Script[] = [];

  server.on('request', (incoming: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const request = await readRequest(incoming);
      requests.push(request);
      const script = scripts.find((candidate) => candidate.remaining > 0 && matches(candidate.match, request));
      if (script !== undefined) {
        script.remaining -= 1;
        if (script.action === 'stall') return;
        sendJson(response, script.action.status, script.action.body, script.action.headers);
        return;
      }
      await handle(request, response);
    })().catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { detail: `fake server failure: ${String(error)}` });
      else response.destroy();
    });
  });

  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    requests,
    stall: (match, times = 1) => void scripts.push({ match, action: 'stall', remaining: times }),
    answerNext: (match, answer, times = 1) => void scripts.push({ match, action: answer, remaining: times }),
    clearScripts: () => void scripts.splice(0),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readRequest(incoming: IncomingMessage): Promise<RecordedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const url = new URL(incoming.url ?? '/', 'http://fake');
  const request: RecordedRequest = { method: incoming.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: incoming.headers, body };
  if ((incoming.headers['content-type'] ?? '').startsWith('application/json') && body.length > 0) {
    try {
      request.json = JSON.parse(body.toString('utf8')) as unknown;
    } catch {
      // Left unparsed: the handler answers a malformed body as the engine would.
    }
  }
  return request;
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}

export function sendBytes(response: ServerResponse, bytes: Uint8Array, contentType: string): void {
  response.writeHead(200, { 'content-type': contentType, 'content-length': bytes.byteLength });
  response.end(bytes);
}

/** Resolves after `milliseconds`. */
export function pause(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
