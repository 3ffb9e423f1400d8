/**
 * Talking to a model host (Hugging Face, a mirror, any URL) with undici, which is why this exists
 * instead of node-llama-cpp's downloader: that one retries an unreachable host for twelve
 * minutes and does not hear the abort signal (see shared/notes/embedded-engine.md). Here every
 * step has a deadline, the signal reaches every request and every wait, and retries are few.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { Agent, request, type Dispatcher } from 'undici';
import { z } from 'zod';
import type { Logger } from '../../../core/ports.js';
import { ModelFileError } from './model-file-error.js';
import { readBodyWithin } from '../../http.js';

export interface ModelHostOptions {
  /** The Hugging Face endpoint; only requests to its origin carry the token. */
  endpoint: string;
  token?: string | undefined;
  logger: Logger;
  signal?: AbortSignal | undefined;
  connectTimeoutMs: number;
  headersTimeoutMs: number;
  idleTimeoutMs: number;
  /** The first pause before a retry; each next one doubles. */
  retryDelayMs: number;
}

/** Thrown by one attempt when another might succeed; `giveUp` is what is thrown when none is left. */
export class TransientFailure extends Error {
  constructor(readonly giveUp: ModelFileError) {
    super(giveUp.message, { cause: giveUp.cause });
  }
}

/** An answer with a body to read (2xx), reached through any redirects. */
export interface OpenedResponse {
  response: Dispatcher.ResponseData;
  /** Hugging Face's `x-linked-size`: the size of the stored file, sent with its redirect to the CDN. */
  linkedSize: number | undefined;
}

export const USER_AGENT = 'likeness (model-fetch)';
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 8;
const MAX_FAILURES_IN_A_ROW = 5;
const MAX_ATTEMPTS = 30;
const MAX_RETRY_DELAY_MS = 30_000;
/** Hugging Face lists even large repositories in well under a megabyte. */
const MAX_LISTING_BYTES = 8 * 1024 * 1024;
const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'UND_ERR_CONNECT_TIMEOUT']);
const DISK_CODES = new Set(['ENOSPC', 'EDQUOT', 'EACCES', 'EPERM', 'EROFS', 'EISDIR', 'ENOTDIR', 'EMFILE']);

const listingSchema = z.object({ siblings: z.array(z.object({ rfilename: z.string() })) });

/** One host conversation: one agent, its timeouts, the token rule and the retry rule. */
export class ModelHost {
  readonly #options: ModelHostOptions;
  readonly #agent: Agent;
  readonly #endpoint: string;
  readonly #endpointOrigin: string;
  /** Origins that have answered in this call: only they are retried when unreachable. */
  readonly #answered = new Set<string>();
  /** The origin of the latest request, named in messages about a failure it had. */
  #lastOrigin: string;

  constructor(options: ModelHostOptions) {
    this.#options = options;
    this.#endpoint = options.endpoint.replace(/\/+$/, '');
    this.#endpointOrigin = new URL(this.#endpoint).origin;
    this.#lastOrigin = this.#endpointOrigin;
    this.#agent = new Agent({ connectTimeout: options.connectTimeoutMs, headersTimeout: options.headersTimeoutMs, bodyTimeout: options.idleTimeoutMs });
  }

  /** `${endpoint}/owner/repo/resolve/main/file`. */
  fileUrl(owner: string, repository: string, file: string): URL {
    return new URL(`${this.#endpoint}/${owner}/${repository}/resolve/main/${file}`);
  }

  /** The file names of a Hugging Face repository, from `GET /api/models/owner/repo`. */
  async listRepository(owner: string, repository: string): Promise<string[]> {
    const url = new URL(`${this.#endpoint}/api/models/${owner}/${repository}`);
    const label = `hf:${owner}/${repository}`;
    return this.withRetries(label, async () => {
      const { response } = await this.open(url, label, { accept: 'application/json' });
      if (response.statusCode !== 200) {
        discard(response.body);
        throw this.statusFailure(response.statusCode, url, label);
      }
      const bytes = await readBodyWithin(response.body, MAX_LISTING_BYTES);
      if (bytes === undefined) throw new ModelFileError('MODEL_DOWNLOAD_FAILED', `A repository listing larger than ${MAX_LISTING_BYTES} bytes was refused: check HF_ENDPOINT.`);
      const text = bytes.toString('utf8');
      let listing: z.infer<typeof listingSchema>;
      try {
        listing = listingSchema.parse(JSON.parse(text));
      } catch (cause) {
        throw new ModelFileError('MODEL_DOWNLOAD_FAILED', `${url.origin} did not answer the listing of ${label} as Hugging Face does: check HF_ENDPOINT (now ${this.#endpoint}).`, { cause });
      }
      return listing.siblings.map((sibling) => sibling.rfilename);
    });
  }

  /**
   * GET through any redirects, sending `headers` on every hop and the token only to the
   * endpoint's own origin (never to the CDN it redirects to). Resolves for any final status;
   * the caller reads or destroys the body.
   */
  async open(url: URL, label: string, headers: Record<string, string> = {}): Promise<OpenedResponse> {
    let current = url;
    let linkedSize: number | undefined;
    for (let hop = 0; hop <= MAX_REDIRECTS; hop += 1) {
      const authorization: Record<string, string> = this.#options.token && current.origin === this.#endpointOrigin ? { authorization: `Bearer ${this.#options.token}` } : {};
      this.#lastOrigin = current.origin;
      const response = await request(current, {
        method: 'GET',
        headers: { 'user-agent': USER_AGENT, ...headers, ...authorization },
        dispatcher: this.#agent,
        signal: this.#options.signal,
        headersTimeout: this.#options.headersTimeoutMs,
        bodyTimeout: this.#options.idleTimeoutMs,
      });
      this.#answered.add(current.origin);
      linkedSize ??= sizeHeader(response.headers['x-linked-size']);
      const location = headerText(response.headers.location);
      if (!REDIRECTS.has(response.statusCode) || location === undefined) return { response, linkedSize };
      discard(response.body);
      const next = new URL(location, current);
      if (next.protocol !== 'https:' && next.protocol !== 'http:') break;
      // The CDN's address carries a signature: the log gets its origin only.
      this.#options.logger.debug({ model: label, from: current.origin, to: next.origin }, 'model host redirected');
      current = next;
    }
    throw new ModelFileError('MODEL_DOWNLOAD_FAILED', `${url.origin} redirected ${label} too many times or to something that is not http(s): check HF_ENDPOINT or the URL in LLM_MODEL.`);
  }

  /** The error for a final status that is not the one hoped for. */
  statusFailure(status: number, url: URL, label: string): ModelFileError | TransientFailure {
    const origin = url.origin;
    if (status === 404) {
      return new ModelFileError('MODEL_NOT_FOUND', `${label} was not found at ${origin} (404): check the owner, repository and file name in LLM_MODEL, or set LLM_MODEL to the path of a .gguf file you have.`);
    }
    if (status === 401 || status === 403) {
      const message =
        origin === this.#endpointOrigin
          ? `${origin} refused ${label} (${status}): the model may be gated or private. Accept its terms on its Hugging Face page and set HF_TOKEN to a token that can read it${this.#options.token ? ' (the HF_TOKEN given was refused)' : ''}; or check that the repository exists.`
          : `${origin} refused ${label} (${status}): it needs credentials LLM_MODEL cannot carry. Download the file yourself and set LLM_MODEL to its path.`;
      return new ModelFileError('MODEL_DOWNLOAD_FAILED', message);
    }
    const failure = new ModelFileError('MODEL_DOWNLOAD_FAILED', `${origin} answered ${status} to ${label}: try again later with npm run model:fetch (it resumes), or set LLM_MODEL to the path of a .gguf file you have.`);
    return status === 408 || status === 429 || status >= 500 ? new TransientFailure(failure) : failure;
  }

  /**
   * Runs `operation` until it succeeds, a failure is final, or it has failed five times in a
   * row without `progressed()` (at most thirty attempts in all), pausing longer each time.
   * The caller's abort ends everything at once, with the signal's reason.
   */
  async withRetries<T>(label: string, operation: () => Promise<T>, progressed: () => boolean = () => false): Promise<T> {
    const { signal, logger } = this.#options;
    let failuresInARow = 0;
    for (let attempt = 1; ; attempt += 1) {
      try {
        return await operation();
      } catch (thrown) {
        if (signal?.aborted) throw signal.reason;
        const failure = this.#classify(thrown, label);
        if (failure instanceof ModelFileError) throw failure;
        failuresInARow = progressed() ? 1 : failuresInARow + 1;
        if (failuresInARow >= MAX_FAILURES_IN_A_ROW || attempt >= MAX_ATTEMPTS) throw failure.giveUp;
        const delayMs = Math.min(this.#options.retryDelayMs * 2 ** (failuresInARow - 1), MAX_RETRY_DELAY_MS);
        const cause: unknown = failure.cause;
        logger.warn({ model: label, attempt, delayMs, code: errorCode(cause), reason: cause instanceof Error ? cause.message : failure.message }, 'model download interrupted; retrying');
        try {
          await delay(delayMs, undefined, signal ? { signal } : {});
        } catch {
          throw signal?.reason;
        }
      }
    }
  }

  async close(): Promise<void> {
    // destroy, not close: a host that never answered would keep close() waiting.
    await this.#agent.destroy();
  }

  /** Turns what a request, a stream or the disk threw into a final error or a transient one. */
  #classify(thrown: unknown, label: string): ModelFileError | TransientFailure {
    if (thrown instanceof ModelFileError || thrown instanceof TransientFailure) return thrown;
    const code = errorCode(thrown);
    const detail = thrown instanceof Error ? thrown.message : String(thrown);
    const origin = this.#lastOrigin;
    const advice = `check the network and HF_ENDPOINT (now ${this.#endpoint}) or the URL in LLM_MODEL; or download the file yourself and set LLM_MODEL to its path (npm run model:fetch downloads it ahead of time).`;
    if (code !== undefined && DISK_CODES.has(code)) {
      return new ModelFileError('MODEL_DOWNLOAD_FAILED', `${label} could not be written to disk (${code}: ${detail}): free some space or fix the permissions of DATA_DIR.`, { cause: thrown });
    }
    let unreachable: ModelFileError | undefined;
    if (code !== undefined && UNREACHABLE_CODES.has(code)) {
      unreachable = new ModelFileError('MODEL_HOST_UNREACHABLE', `Could not reach ${origin} for ${label} (${code}): ${advice}`, { cause: thrown });
    } else if (code === 'UND_ERR_HEADERS_TIMEOUT') {
      unreachable = new ModelFileError('MODEL_HOST_UNREACHABLE', `${origin} accepted the connection for ${label} but did not answer within ${this.#options.headersTimeoutMs} ms: ${advice}`, { cause: thrown });
    }
    // A host never heard from fails at once; one that answered earlier in this call lost its
    // connection in passing, and is worth a few more tries.
    if (unreachable !== undefined) return this.#answered.has(origin) ? new TransientFailure(unreachable) : unreachable;
    return new TransientFailure(
      new ModelFileError('MODEL_DOWNLOAD_FAILED', `The download of ${label} from ${origin} kept breaking off (${code ?? detail}); what arrived is kept: run npm run model:fetch to resume.`, { cause: thrown }),
    );
  }
}

function errorCode(thrown: unknown): string | undefined {
  if (thrown === null || typeof thrown !== 'object') return undefined;
  const code = (thrown as { code?: unknown }).code;
  if (typeof code === 'string') return code;
  // Happy Eyeballs reports every failed address in an AggregateError.
  const errors = (thrown as { errors?: unknown }).errors;
  if (Array.isArray(errors)) return errorCode(errors[0]);
  const cause = (thrown as { cause?: unknown }).cause;
  return cause === undefined ? undefined : errorCode(cause);
}

/** Drops a body we will not read; destroying it unread emits an error nobody needs to hear. */
export function discard(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

export function headerText(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function sizeHeader(value: string | string[] | undefined): number | undefined {
  const text = headerText(value);
  if (text === undefined || !/^\d+$/.test(text.trim())) return undefined;
  return Number(text.trim());
}

