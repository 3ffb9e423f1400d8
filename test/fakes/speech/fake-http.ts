/**
 * What the fake speech servers share: a `node:http` server on 127.0.0.1, a record of every
 * request (headers, JSON or multipart parts), scripted failures, and audio answers written in
 * chunks so streaming clients see them arrive piece by piece.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** How the next requests fail, until the script changes. */
export type FakeFailure =
  /** An error status; the fake writes the engine's own error body unless `message` replaces its text. */
  | { kind: 'http'; status: number; message?: string }
  /** Accepts the request and never answers, not even headers. */
  | { kind: 'hang' }
  /** Sends the headers and `afterBytes` of audio, then destroys the connection. */
  | { kind: 'drop'; afterBytes?: number }
  /** Sends the headers and `afterBytes` of audio, then goes silent. */
  | { kind: 'stall'; afterBytes?: number };

export interface FakeRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** The parsed body when it was JSON. */
  json?: unknown;
  /** The parsed body when it was multipart/form-data. */
  form?: FormData;
}

export interface FakeScript {
  failure?: FakeFailure;
  /** Size of each audio write; odd by default, so clients must rejoin split samples. */
  chunkBytes?: number;
  /** Pause between audio writes. */
  chunkDelayMs?: number;
}

export interface FakeServer {
  readonly baseURL: string;
  readonly requests: FakeRequest[];
  script: FakeScript;
  close(): Promise<void>;
}

export type FakeHandler = (request: FakeRequest, response: ServerResponse, server: FakeServer) => Promise<void> | void;

/** Starts a server whose failures come from `script` and whose answers come from `handle`. */
export async function startFakeServer(handle: FakeHandler, errorBody: (status: number, message: string | undefined) => unknown): Promise<FakeServer> {
  const server = createServer();
  const address = await new Promise<AddressInfo>((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address() as AddressInfo)));
  const fake: FakeServer = {
    baseURL: `http://127.0.0.1:${address.port}`,
    requests: [],
    script: {},
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  server.on('request', (incoming: IncomingMessage, response: ServerResponse) => {
    void (async () => {
      const request = await readRequest(incoming);
      fake.requests.push(request);
      const failure = fake.script.failure;
      if (failure?.kind === 'hang') return;
      if (failure?.kind === 'http') {
        sendJson(response, failure.status, errorBody(failure.status, failure.message));
        return;
      }
      await handle(request, response, fake);
    })().catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { detail: String(error) });
      else response.destroy();
    });
  });
  return fake;
}

async function readRequest(incoming: IncomingMessage): Promise<FakeRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  const url = new URL(incoming.url ?? '/', 'http://fake');
  const request: FakeRequest = { method: incoming.method ?? 'GET', path: url.pathname, query: url.searchParams, headers: incoming.headers, body };
  const type = incoming.headers['content-type'] ?? '';
  if (type.startsWith('application/json')) request.json = JSON.parse(body.toString('utf8')) as unknown;
  // The platform's own multipart parser, as strict about boundaries as a real server's.
  if (type.startsWith('multipart/form-data')) request.form = await new Request('http://fake/', { method: 'POST', headers: { 'content-type': type }, body }).formData();
  return request;
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  response.end(text);
}

/**
 * Writes audio in chunks, obeying a scripted `drop` or `stall`. Whole answers carry a
 * content-length; streamed ones are chunked, as the real engines do.
 */
export async function sendAudio(response: ServerResponse, fake: FakeServer, contentType: string, audio: Uint8Array, streamed: boolean): Promise<void> {
  const { failure, chunkBytes = 4001, chunkDelayMs = 2 } = fake.script;
  const cut = failure?.kind === 'drop' || failure?.kind === 'stall' ? Math.min(failure.afterBytes ?? 0, audio.length) : audio.length;
  response.writeHead(200, streamed ? { 'content-type': contentType } : { 'content-type': contentType, 'content-length': audio.length });
  response.flushHeaders();
  for (let offset = 0; offset < cut; offset += chunkBytes) {
    response.write(audio.subarray(offset, Math.min(cut, offset + chunkBytes)));
    await new Promise((resolve) => setTimeout(resolve, chunkDelayMs));
  }
  if (failure?.kind === 'drop') response.destroy();
  else if (failure?.kind !== 'stall') response.end();
}
