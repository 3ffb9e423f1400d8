/**
 * A fake Hugging Face on 127.0.0.1: `/owner/repo/resolve/main/<file>` (optionally a 302 with
 * `x-linked-size` to a second loopback server standing in for the CDN, as HF does),
 * `/api/models/owner/repo` listing the files, and `/direct/<owner/repo/file>` for plain URLs.
 * File answers honour `Range: bytes=N-` (206, or 416 past the end) and can be scripted one
 * request at a time: cut after N bytes, a short body under an honest-looking Content-Length,
 * a status, never answering, or pausing until the test says so. It counts what it serves.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { listenOnLoopback, sendJson, type Loopback } from './loopback-http.js';

/** What the next file request gets; requests past the script are answered normally. */
export type FileBehaviour =
  | { kind: 'ok' }
  /** Sends the headers and `afterBytes` of the body, then destroys the socket. */
  | { kind: 'cut'; afterBytes: number }
  /** Announces and sends only `bytes` (a consistent but short answer); `x-linked-size` still says the whole size. */
  | { kind: 'short'; bytes: number }
  | { kind: 'status'; status: number; body?: unknown }
  /** Accepts the request and never answers. */
  | { kind: 'hang' }
  /** Sends `afterBytes`, then waits for `until` before sending the rest. */
  | { kind: 'pause'; afterBytes: number; until: Promise<void> };

export interface FakeModelHostOptions {
  /** Served files by `owner/repo/path`. */
  files: Record<string, Buffer>;
  /** Names listed by `/api/models/owner/repo` without being served (other quants, split parts). */
  listedOnly?: Record<string, string[]>;
  /** Answer `resolve` with a 302 to the CDN server, as huggingface.co does. */
  redirect?: boolean;
  /** Requests to the main server without `Bearer <token>` get 401, as for a gated model. */
  token?: string;
}

export interface FileRequest {
  server: 'main' | 'cdn';
  path: string;
  headers: IncomingHttpHeaders;
  status: number;
}

export interface FakeModelHost {
  /** The endpoint, like https://huggingface.co. */
  readonly url: string;
  readonly cdnUrl: string;
  /** Every request to either server, in order of arrival. */
  readonly requests: FileRequest[];
  /** Scripted answers for the next requests that send file bytes (resolve without redirect, CDN, direct). */
  readonly script: FileBehaviour[];
  /** Body bytes of files written to sockets so far. */
  servedBytes(): number;
  close(): Promise<void>;
}

export async function startFakeModelHost(options: FakeModelHostOptions): Promise<FakeModelHost> {
  const requests: FileRequest[] = [];
  const script: FileBehaviour[] = [];
  let served = 0;
  let cdn: Loopback | undefined;

  const serveFile = async (key: string, headers: IncomingHttpHeaders, response: ServerResponse, record: FileRequest): Promise<void> => {
    const file = options.files[key];
    if (file === undefined) return void answer(response, record, 404, { error: 'Entry not found' });
    const behaviour = script.shift() ?? { kind: 'ok' };
    if (behaviour.kind === 'hang') return;
    if (behaviour.kind === 'status') return void answer(response, record, behaviour.status, behaviour.body ?? { error: `status ${behaviour.status}` });
    const start = rangeStart(headers.range);
    if (start !== undefined && start >= file.length) {
      record.status = 416;
      response.writeHead(416, { 'content-range': `bytes */${file.length}` });
      return void response.end();
    }
    const from = start ?? 0;
    const body = behaviour.kind === 'short' ? file.subarray(from, behaviour.bytes) : file.subarray(from);
    record.status = start === undefined ? 200 : 206;
    response.writeHead(record.status, {
      'content-type': 'application/octet-stream',
      'content-length': String(body.length),
      'x-linked-size': String(file.length),
      ...(start === undefined ? {} : { 'content-range': `bytes ${from}-${file.length - 1}/${file.length}` }),
    });
    if (behaviour.kind === 'cut' || behaviour.kind === 'pause') {
      const head = body.subarray(0, behaviour.afterBytes);
      await write(response, head);
      served += head.length;
      if (behaviour.kind === 'cut') return void response.socket?.destroy();
      await behaviour.until;
      const rest = body.subarray(behaviour.afterBytes);
      served += rest.length;
      return void response.end(rest);
    }
    served += body.length;
    response.end(body);
  };

  const main = await listenOnLoopback(async (request, response) => {
    const record: FileRequest = { server: 'main', path: request.path, headers: request.headers, status: 0 };
    requests.push(record);
    if (options.token !== undefined && request.headers.authorization !== `Bearer ${options.token}`) {
      return answer(response, record, 401, { error: 'Access to this model is restricted. You must be authenticated.' });
    }
    const listing = /^\/api\/models\/([^/]+\/[^/]+)$/.exec(request.path);
    if (listing) {
      const repository = listing[1] ?? '';
      const names = [...Object.keys(options.files).filter((key) => key.startsWith(`${repository}/`)).map((key) => key.slice(repository.length + 1)), ...(options.listedOnly?.[repository] ?? [])];
      if (names.length === 0) return answer(response, record, 404, { error: 'Repository not found' });
      return answer(response, record, 200, { id: repository, siblings: names.map((rfilename) => ({ rfilename })) });
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/main\/(.+)$/.exec(request.path);
    if (resolve) {
      const key = `${resolve[1]}/${resolve[2]}`;
      const file = options.files[key];
      if (options.redirect && file !== undefined && cdn !== undefined) {
        record.status = 302;
        response.writeHead(302, { location: `${cdn.url}/blobs/${key}?signature=fake`, 'x-linked-size': String(file.length), 'content-length': '0' });
        return void response.end();
      }
      return serveFile(key, request.headers, response, record);
    }
    if (request.path.startsWith('/direct/')) return serveFile(request.path.slice('/direct/'.length), request.headers, response, record);
    return answer(response, record, 404, { error: 'not found' });
  });
  cdn = await listenOnLoopback(async (request, response) => {
    const record: FileRequest = { server: 'cdn', path: request.path, headers: request.headers, status: 0 };
    requests.push(record);
    if (!request.path.startsWith('/blobs/')) return answer(response, record, 404, { error: 'not found' });
    return serveFile(request.path.slice('/blobs/'.length), request.headers, response, record);
  });

  const servers = [main, cdn];
  return {
    url: main.url,
    cdnUrl: cdn.url,
    requests,
    script,
    servedBytes: () => served,
    close: async () => {
      await Promise.all(servers.map((server) => server.close()));
    },
  };
}

/** GGUF-like bytes: the magic, then bytes from a seeded generator (the same seed, the same file). */
export function modelBlob(size: number, seed = 1): Buffer {
  const blob = Buffer.alloc(size);
  blob.write('GGUF', 0, 'ascii');
  let state = seed >>> 0 || 1;
  for (let index = 4; index < size; index += 1) {
    // xorshift32: cheap, and enough to make every offset's byte differ from its neighbours'.
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    blob[index] = state & 0xff;
  }
  return blob;
}

function answer(response: ServerResponse, record: FileRequest, status: number, body: unknown): void {
  record.status = status;
  sendJson(response, status, body);
}

function rangeStart(range: string | undefined): number | undefined {
  const match = range === undefined ? null : /^bytes=(\d+)-$/.exec(range);
  return match ? Number(match[1]) : undefined;
}

function write(response: ServerResponse, bytes: Buffer): Promise<void> {
  return new Promise((resolve, reject) => response.write(bytes, (error) => (error ? reject(error) : resolve())));
}
