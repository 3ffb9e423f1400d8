/**
 * What the fake speech servers share: a `node:http` server on 127.0.0.1, a record of every
 * request (headers, JSON or multipart parts), scripted failures, and audio answers written in
 * chunks so streaming clients see them arrive piece by piece.
 */
import type { Server, ServerResponse } from 'node:http';
import { type LoopbackRequest, listenOnLoopback, sendJson } from '../loopback-http.js';

export { sendJson };

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

/** A request as the fake received it. */
export type FakeRequest = LoopbackRequest;

export interface FakeScript {
  failure?: FakeFailure;
  /** Size of each audio write; odd by default, so clients must rejoin split samples. */
  chunkBytes?: number;
  /** Pause between audio writes. */
  chunkDelayMs?: number;
  /** Pause after the headers, before the first audio (an engine's time to first audio; benchmarks). */
  firstAudioDelayMs?: number;
}

export interface FakeServer {
  readonly baseURL: string;
  /** The `node:http` server, for a test to watch a request's connection (a client that gives up closes it). */
  readonly server: Server;
  readonly requests: FakeRequest[];
  script: FakeScript;
  close(): Promise<void>;
}

export type FakeHandler = (request: FakeRequest, response: ServerResponse, server: FakeServer) => Promise<void> | void;

/** Starts a server whose failures come from `script` and whose answers come from `handle`. */
export async function startFakeServer(handle: FakeHandler, errorBody: (status: number, message: string | undefined) => unknown): Promise<FakeServer> {
  let fake: FakeServer | undefined;
  const loopback = await listenOnLoopback(async (request, response) => {
    const failure = fake!.script.failure;
    if (failure?.kind === 'hang') return;
    if (failure?.kind === 'http') {
      sendJson(response, failure.status, errorBody(failure.status, failure.message));
      return;
    }
    await handle(request, response, fake!);
  });
  fake = { baseURL: loopback.url, server: loopback.server, requests: loopback.requests, script: {}, close: loopback.close };
  return fake;
}

/**
 * Writes audio in chunks, obeying a scripted `drop` or `stall`. Whole answers carry a
 * content-length; streamed ones are chunked, as the real engines do.
 */
export async function sendAudio(response: ServerResponse, fake: FakeServer, contentType: string, audio: Uint8Array, streamed: boolean): Promise<void> {
  const { failure, chunkBytes = 4001, chunkDelayMs = 2, firstAudioDelayMs = 0 } = fake.script;
  const cut = failure?.kind === 'drop' || failure?.kind === 'stall' ? Math.min(failure.afterBytes ?? 0, audio.length) : audio.length;
  response.writeHead(200, streamed ? { 'content-type': contentType } : { 'content-type': contentType, 'content-length': audio.length });
  response.flushHeaders();
  if (firstAudioDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, firstAudioDelayMs));
  for (let offset = 0; offset < cut; offset += chunkBytes) {
    response.write(audio.subarray(offset, Math.min(cut, offset + chunkBytes)));
    await new Promise((resolve) => setTimeout(resolve, chunkDelayMs));
  }
  if (failure?.kind === 'drop') response.destroy();
  else if (failure?.kind !== 'stall') response.end();
}
