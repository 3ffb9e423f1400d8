/**
 * An `ImageEngine` over a self-hosted Cog container (the Replicate SDXL model run locally).
 *
 * `PUT /predictions/{jobId}` is synchronous and idempotent by id: the answer is the finished
 * prediction, and a second PUT while that id still runs starts nothing new but answers 202
 * with the run's current state. Cog can neither be polled nor keeps finished predictions, so
 * on a 202 (our own run from before a restart) we wait and PUT again; once the old run ends,
 * the next PUT makes the images anew. One prediction runs at a time; 409 means busy.
 */
import type { Dispatcher } from 'undici';
import type { EngineFile, EngineRun, ImageEngine, ImageRequest } from '../../core/ports.js';
import type { EngineTimeouts } from '../http.js';
import { outputImages } from './engine-files.js';
import { BLOCKING_HEADERS_TIMEOUT_MS, type ImageHttp, type ImageHttpAnswer, createImageHttp, isSuccess } from './engine-http.js';
import { errorText, modelInput } from './replicate-wire.js';
import { cancelsRemoteWork, forwardProgress, progressOfLogs, sleep } from './wait.js';

export const COG_PROVIDER = 'cog';

export interface CogImageOptions extends EngineTimeouts {
  /** e.g. `http://127.0.0.1:5000`. */
  baseURL: string;
  /** Predictions run at once; Cog's default `concurrency.max` is 1. */
  concurrency?: number;
  /** Wait before asking again while Cog is busy, starting, or still on our earlier run (default 1000 ms). */
  pollIntervalMs?: number;
  /** How many times a busy (409) or starting (503) container is asked again before giving up (default 60). */
  busyRetries?: number;
  /** Wait for the prediction's answer headers, i.e. the whole generation (default 10 minutes). */
  headersTimeoutMs?: number;
  dispatcher?: Dispatcher;
}

const LABEL = 'Cog';
const CANCEL_TIMEOUT_MS = 5_000;

/** The Cog engine; `close()` releases its connections. */
export function createCogImageEngine(options: CogImageOptions): ImageEngine {
  const http = createImageHttp({
    provider: COG_PROVIDER,
    label: LABEL,
    purpose: 'image',
    baseURL: options.baseURL,
    dispatcher: options.dispatcher,
    connectTimeoutMs: options.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? BLOCKING_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: options.bodyTimeoutMs,
  });
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  const busyRetries = options.busyRetries ?? 60;

  const generate = async (request: ImageRequest, run: EngineRun): Promise<EngineFile[]> => {
    const { signal } = run;
    signal.throwIfAborted();
    const id = run.resumeId ?? request.jobId;
    const input = modelInput(request);
    if (run.resumeId !== id) await run.submitted(id);
    const report = forwardProgress((fraction) => run.progress(fraction));
    let waits = 0;
    try {
      for (;;) {
        signal.throwIfAborted();
        const answer = await http.exchange({ method: 'PUT', target: `/predictions/${encodeURIComponent(id)}`, json: { input }, headers: { accept: 'application/json' }, signal });
        if (answer.status === 202) {
          const progress = progressOfLogs(fieldOf(http, answer, 'logs'));
          if (progress !== undefined) report(progress);
        } else if (answer.status === 409 || answer.status === 503) {
          if (answer.status === 503) await checkHealth(http, signal);
          if (++waits > busyRetries) throw http.failure(answer);
        } else {
          if (!isSuccess(answer)) throw http.failure(answer);
          return await finished(http, id, http.parse(answer), signal);
        }
        await sleep(pollIntervalMs, signal);
      }
    } catch (thrown) {
      if (!signal.aborted) throw thrown;
      // coglet cancels a synchronous run when its connection closes, even as the service
      // stops; Python Cog runs on (a restart then attaches to it) unless asked to cancel.
      if (cancelsRemoteWork(signal)) await cancel(http, id);
      throw signal.reason;
    }
  };

  return {
    provider: COG_PROVIDER,
    concurrency: options.concurrency ?? 1,
    generate,
    close: () => http.close(),
  };
}

function fieldOf(http: ImageHttp, answer: ImageHttpAnswer, name: string): unknown {
  const body = http.parse(answer);
  return body !== null && typeof body === 'object' ? (body as Record<string, unknown>)[name] : undefined;
}

/** The images of a finished prediction, or its failure as an `EngineError`. */
async function finished(http: ImageHttp, id: string, body: unknown, signal: AbortSignal): Promise<EngineFile[]> {
  const prediction = body !== null && typeof body === 'object' ? (body as Record<string, unknown>) : {};
  const status = prediction['status'];
  if (status === 'failed') throw http.client.error(`${LABEL} prediction ${id} failed: ${errorText(prediction['error'])}`, { retryable: false });
  if (status === 'canceled') throw http.client.error(`${LABEL} prediction ${id} was canceled at the engine.`, { retryable: false });
  if (status !== 'succeeded') throw http.client.error(`${LABEL} answered prediction ${id} with status ${String(status)}.`, { retryable: false });
  const files = await outputImages(http, prediction['output'], signal, `${LABEL} prediction ${id}`);
  if (files.length === 0) throw http.client.error(`${LABEL} prediction ${id} succeeded without output files.`, { retryable: false });
  return files;
}

/**
 * Turns a 503 into a clear message when waiting cannot help: `/health-check` says whether
 * the container is still starting (wait) or broken (tell the operator).
 */
async function checkHealth(http: ImageHttp, signal: AbortSignal): Promise<void> {
  const health = await http.json({ target: '/health-check', signal }).catch(() => undefined);
  const record = health !== null && typeof health === 'object' ? (health as Record<string, unknown>) : {};
  const status = typeof record['status'] === 'string' ? record['status'] : 'unknown';
  if (status === 'STARTING' || status === 'READY' || status === 'BUSY' || status === 'unknown') return;
  const setup = record['setup'];
  const logs = setup !== null && typeof setup === 'object' ? (setup as Record<string, unknown>)['logs'] : undefined;
  const detail = typeof record['user_healthcheck_error'] === 'string' ? record['user_healthcheck_error'] : typeof logs === 'string' ? logs.trim().split('\n').slice(-3).join(' | ') : '';
  throw http.client.error(
    `${LABEL} container at ${http.client.displayURL} is ${status}${status === 'SETUP_FAILED' || status === 'DEFUNCT' ? ' and needs a restart' : ''}${detail === '' ? '.' : `: ${detail}`}`,
    { code: 'ENGINE_UNAVAILABLE', status: 503, retryable: status === 'UNHEALTHY' },
  );
}

async function cancel(http: ImageHttp, id: string): Promise<void> {
  try {
    await http.exchange({ method: 'POST', target: `/predictions/${encodeURIComponent(id)}/cancel`, signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) });
  } catch {
    // Best effort: the run is being abandoned either way.
  }
}
