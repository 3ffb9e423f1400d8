/**
 * The HTTP side the image adapters share, built on `../http.ts` (one agent with explicit
 * timeouts, one mapping of transport failures to `EngineError`). Image engines need what a
 * plain `send` hides: the status, headers and body of any answer (Replicate's `retry-after`,
 * A1111's error fields, Cog's 202 and 409), and absolute URLs on other hosts (output files),
 * which must be fetched without our credentials.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { type Dispatcher, request } from 'undici';
import type { EngineError, EnginePurpose } from '../../core/errors.js';
import { type EngineClient, type EngineTimeouts, createEngineAgent, createEngineClient, readBodyWithin, resolveEngineTimeouts, truncate, upstreamMessage } from '../http.js';

/**
 * Default wait for response headers on engines that answer only once the images exist
 * (A1111 txt2img, a synchronous Cog prediction): SDXL with several outputs takes minutes.
 */
export const BLOCKING_HEADERS_TIMEOUT_MS = 600_000;

/** Largest answer read by default: four 1024² PNGs in base64 JSON stay well below it. */
const DEFAULT_MAX_BYTES = 128 * 1024 * 1024;

export interface ImageHttpOptions extends EngineTimeouts {
  provider: string;
  /** How messages name the engine, e.g. `Replicate`. */
  label: string;
  purpose?: EnginePurpose;
  baseURL: string;
  /** Credentials and the like: sent to the base URL's origin only, never to file hosts. */
  headers?: Record<string, string>;
  dispatcher?: Dispatcher;
}

export interface ImageHttpRequest {
  method?: Dispatcher.HttpMethod;
  /** A path under the base URL (`/predictions`), or an absolute http(s) URL. */
  target: string;
  /** Sent as a JSON body. */
  json?: unknown;
  headers?: Record<string, string>;
  signal?: AbortSignal | undefined;
  /** Largest body accepted; larger answers fail. */
  maxBytes?: number;
}

/** Any answer, 2xx or not, read whole. */
export interface ImageHttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface ImageHttp {
  readonly client: EngineClient;
  /** Sends a request and returns whatever came back; only transport failures throw. */
  exchange(httpRequest: ImageHttpRequest): Promise<ImageHttpAnswer>;
  /** Sends a request that must answer 2xx with JSON, and parses it. */
  json(httpRequest: ImageHttpRequest): Promise<unknown>;
  /** Parses an answer's JSON body. */
  parse(answer: ImageHttpAnswer): unknown;
  /** The error for a non-2xx answer, carrying its status and the engine's own reason. */
  failure(answer: ImageHttpAnswer): EngineError;
  close(): Promise<void>;
}

/** Whether the engine answered 2xx. */
export function isSuccess(answer: ImageHttpAnswer): boolean {
  return answer.status >= 200 && answer.status < 300;
}

/** One engine's HTTP side; `close()` releases the agent it owns (not a caller-owned dispatcher). */
export function createImageHttp(options: ImageHttpOptions): ImageHttp {
  const timeouts = resolveEngineTimeouts(options);
  const ownedAgent = options.dispatcher ? undefined : createEngineAgent(timeouts);
  const dispatcher: Dispatcher = options.dispatcher ?? (ownedAgent as Dispatcher);
  // The client holds the failure mapping; it shares our dispatcher and so owns no agent.
  const client = createEngineClient({ ...options, ...timeouts, dispatcher });
  const baseURL = options.baseURL.replace(/\/+$/, '');
  const baseOrigin = new URL(baseURL).origin;
  const { label } = options;
  let closing: Promise<void> | undefined;

  const exchange: ImageHttp['exchange'] = async (httpRequest) => {
    const absolute = /^https?:\/\//i.test(httpRequest.target);
    const url = absolute ? httpRequest.target : `${baseURL}${httpRequest.target}`;
    const ownOrigin = new URL(url).origin === baseOrigin;
    const headers: Record<string, string> = { ...(ownOrigin ? options.headers : {}), ...httpRequest.headers };
    let body: string | null = null;
    if (httpRequest.json !== undefined) {
      body = JSON.stringify(httpRequest.json);
      headers['content-type'] = 'application/json';
    }
    const { signal } = httpRequest;
    try {
      const response = await request(url, {
        method: httpRequest.method ?? 'GET',
        headers,
        body,
        signal,
        dispatcher,
        // Per request as well, so the timeouts hold on a caller-owned dispatcher too.
        headersTimeout: timeouts.headersTimeoutMs,
        bodyTimeout: timeouts.bodyTimeoutMs,
      });
      const data = await readBodyWithin(response.body, httpRequest.maxBytes ?? DEFAULT_MAX_BYTES);
      if (data === undefined) {
        throw client.error(`${label} sent more than ${Math.round((httpRequest.maxBytes ?? DEFAULT_MAX_BYTES) / 1024 / 1024)} MB from ${url.split('?')[0]}.`, { retryable: false });
      }
      return { status: response.statusCode, headers: response.headers, body: data };
    } catch (thrown) {
      throw client.translate(thrown, signal);
    }
  };

  const parse: ImageHttp['parse'] = (answer) => {
    const text = answer.body.toString('utf8');
    try {
      return JSON.parse(text) as unknown;
    } catch (cause) {
      throw client.error(`${label} answered with malformed JSON: ${truncate(text)}`, { status: answer.status, retryable: false, cause });
    }
  };

  const failure: ImageHttp['failure'] = (answer) =>
    client.error(`${label} answered ${answer.status}: ${upstreamMessage(answer.body.toString('utf8')) || 'no details'}`, { status: answer.status });

  return {
    client,
    exchange,
    parse,
    failure,
    json: async (httpRequest) => {
      const answer = await exchange({ ...httpRequest, headers: { accept: 'application/json', ...httpRequest.headers } });
      if (!isSuccess(answer)) throw failure(answer);
      return parse(answer);
    },
    // Idempotent: undici throws when a closed agent is closed again.
    close: () => (closing ??= ownedAgent?.close() ?? Promise.resolve()),
  };
}

