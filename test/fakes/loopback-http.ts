/**
 * What every fake engine server shares: a `node:http` server on 127.0.0.1 only, each request
 * read whole and recorded (JSON and multipart bodies parsed), and one way to answer JSON.
 * The speech and image fakes add their own scripted misbehaviour on top.
 */
import { type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LoopbackRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** `performance.now()` when the body had been read (benchmarks time the engines' stages by it). */
  receivedAt: number;
  /** The parsed body when it was JSON (left out when it does not parse). */
  json?: unknown;
  /** The parsed body when it was multipart/form-data. */
  form?: FormData;
}

export interface Loopback {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  readonly server: Server;
  readonly requests: LoopbackRequest[];
  close(): Promise<void>;
}

/**
 * Listens on a free loopback port; every request is read, recorded and handed to `handle`.
 * A handler that throws answers 500 (or drops the connection once an answer has begun).
 */
export async function listenOnLoopback(handle: (request: LoopbackRequest, response: ServerResponse) => Promise<void> | void): Promise<Loopback> {
  const server = createServer();
  const address = await new Promise<AddressInfo>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)));
  const requests: LoopbackRequest[] = [];
  server.on('request', (incoming: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const request = await readRequest(incoming);
      requests.push(request);
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
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function readRequest(incoming: IncomingMessage): Promise<LoopbackRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const url = new URL(incoming.url ?? '/', 'http://fake');
  const request: LoopbackRequest = { method: incoming.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: incoming.headers, body, receivedAt: performance.now() };
  const type = incoming.headers['content-type'] ?? '';
  if (type.startsWith('application/json') && body.length > 0) {
    try {
      request.json = JSON.parse(body.toString('utf8')) as unknown;
    } catch {
      // Left unparsed: the handler answers a malformed body as the engine would.
    }
  }
  // The platform's own multipart parser, as strict about boundaries as a real server's.
  if (type.startsWith('multipart/form-data')) request.form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': type }, body }).formData();
  return request;
}

export function sendJson(response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  response.end(text);
}
