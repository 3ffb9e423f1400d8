/**
 * The main-thread side of the espeak worker: starts it on first use, numbers requests, and
 * turns a crash or failed start into `EngineError`s; the next request then starts a new one.
 */
import { Worker } from 'node:worker_threads';
import { EngineError } from '../../core/errors.js';
import type { PcmAudio } from '../../core/ports.js';
import type { EspeakCatalogue, EspeakReply, EspeakSynthesisRequest } from './espeak-protocol.js';

export const ESPEAK_PROVIDER = 'espeak';

/** From source the worker is TypeScript, in a build JavaScript: the same file name either way. */
const WORKER_URL = new URL(`./espeak-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

interface PendingJob {
  resolve: (pcm: PcmAudio) => void;
  reject: (reason: unknown) => void;
}

interface Running {
  worker: Worker;
  ready: Promise<EspeakCatalogue>;
  /** Fails a start still under way; after the start it changes nothing. */
  failStart: (reason: unknown) => void;
  jobs: Map<number, PendingJob>;
}

export class EspeakThread {
  #running: Running | undefined;
  #nextId = 1;

  /** The languages and variants espeak knows; starts the worker when needed. */
  catalogue(): Promise<EspeakCatalogue> {
    return this.#start().ready;
  }

  /** Synthesises one piece of text; requests are answered in the order they were sent. */
  async synthesize(request: Omit<EspeakSynthesisRequest, 'id'>, signal?: AbortSignal): Promise<PcmAudio> {
    signal?.throwIfAborted();
    const running = this.#start();
    await running.ready;
    signal?.throwIfAborted();
    // The worker may have stopped while this request waited for it: go to its successor.
    if (this.#running !== running) return this.synthesize(request, signal);
    const id = this.#nextId++;
    const result = new Promise<PcmAudio>((resolve, reject) => running.jobs.set(id, { resolve, reject }));
    if (running.jobs.size === 1) running.worker.ref();
    running.worker.postMessage({ ...request, id } satisfies EspeakSynthesisRequest);
    if (signal === undefined) return result;
    // espeak cannot be interrupted mid-sentence; an abort only stops waiting for it.
    return new Promise<PcmAudio>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      result.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** Stops the worker; pending requests fail. A later request starts a new one. */
  async close(): Promise<void> {
    const running = this.#running;
    if (running === undefined) return;
    this.#stop(running, new EngineError('The espeak engine was closed.', { provider: ESPEAK_PROVIDER, purpose: 'speech', retryable: false }));
    await running.worker.terminate();
  }

  #start(): Running {
    if (this.#running !== undefined) return this.#running;
    const worker = new Worker(WORKER_URL);
    const jobs = new Map<number, PendingJob>();
    let resolveStart: (catalogue: EspeakCatalogue) => void = () => undefined;
    let failStart: (reason: unknown) => void = () => undefined;
    const ready = new Promise<EspeakCatalogue>((resolve, reject) => {
      resolveStart = resolve;
      failStart = reject;
    });
    // The failure reaches whoever awaits `ready`; this only keeps it from counting as unhandled.
    ready.catch(() => undefined);
    const running: Running = { worker, ready, failStart, jobs };
    this.#running = running;

    worker.on('message', (reply: EspeakReply) => {
      if (reply.kind === 'ready') {
        resolveStart(reply.catalogue);
        if (jobs.size === 0) worker.unref();
        return;
      }
      if (reply.kind === 'failed-to-start') {
        this.#stop(running, engineFailure(`espeak could not start: ${reply.message}`, 'ENGINE_UNAVAILABLE'));
        void worker.terminate();
        return;
      }
      const job = jobs.get(reply.id);
      if (job === undefined) return;
      jobs.delete(reply.id);
      // An idle worker must not keep the process alive.
      if (jobs.size === 0) worker.unref();
      if (reply.kind === 'audio') job.resolve({ sampleRate: reply.sampleRate, samples: reply.samples });
      else job.reject(engineFailure(`espeak failed: ${reply.message}`));
    });
    worker.on('error', (error) => this.#stop(running, engineFailure(`espeak's worker failed: ${error.message}`, 'ENGINE_FAILED', error)));
    worker.on('exit', (code) => this.#stop(running, engineFailure(`espeak's worker stopped (exit code ${code}).`)));
    return running;
  }

  /** Fails everything waiting on `running` and forgets it, once. */
  #stop(running: Running, reason: EngineError): void {
    if (this.#running === running) this.#running = undefined;
    running.failStart(reason);
    for (const job of running.jobs.values()) job.reject(reason);
    running.jobs.clear();
  }
}

function engineFailure(message: string, code: 'ENGINE_FAILED' | 'ENGINE_UNAVAILABLE' = 'ENGINE_FAILED', cause?: unknown): EngineError {
  return new EngineError(message, { provider: ESPEAK_PROVIDER, purpose: 'speech', code, retryable: true, cause });
}
