/**
 * What the fake image engines share: a `node:http` server on 127.0.0.1, a record of every
 * request, and scripted misbehaviour for the next matching requests (a stall, or a given
 * answer such as a 429 with `retry-after`) before the engine's own handler sees them.
 */
import type { ServerResponse } from 'node:http';
import { type Loopback, type LoopbackRequest, listenOnLoopback, sendJson } from '../loopback-http.js';

export { sendJson };

/** A request as the fake received it. */
export type RecordedRequest = LoopbackRequest;

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

export interface LoopbackServer extends Loopback {
  /** The next `times` matching requests are accepted and never answered, not even headers. */
  stall(match: RequestMatch, times?: number): void;
  /** The next `times` matching requests get `answer` instead of the engine's. */
  answerNext(match: RequestMatch, answer: ScriptedAnswer, times?: number): void;
  /** Drops every script not yet used up, so one test's leftovers cannot reach the next. */
  clearScripts(): void;
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
  const scripts: Script[] = [];
  const loopback = await listenOnLoopback(async (request, response) => {
    const script = scripts.find((candidate) => candidate.remaining > 0 && matches(candidate.match, request));
    if (script === undefined) return handle(request, response);
    script.remaining -= 1;
    if (script.action !== 'stall') sendJson(response, script.action.status, script.action.body, script.action.headers);
  });
  return {
    ...loopback,
    stall: (match, times = 1) => void scripts.push({ match, action: 'stall', remaining: times }),
    answerNext: (match, answer, times = 1) => void scripts.push({ match, action: answer, remaining: times }),
    clearScripts: () => void scripts.splice(0),
  };
}

export function sendBytes(response: ServerResponse, bytes: Uint8Array, contentType: string): void {
  response.writeHead(200, { 'content-type': contentType, 'content-length': bytes.byteLength });
  response.end(bytes);
}

/** Resolves after `milliseconds`. */
export function pause(milliseconds: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, milliseconds));
}
