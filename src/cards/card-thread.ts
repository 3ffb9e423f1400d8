/**
 * Card files are read in a worker thread, never on the event loop: a 10 MB card is tens of
 * milliseconds of base64, JSON and lorebook on a quiet machine and several times that on a busy
 * one, and every other request (a `/healthz`, a streamed reply) would wait behind it. The thread
 * starts with the first card, reads one card at a time, and does not keep the process alive
 * when idle. Its heap is capped, so a card that needs more memory is refused (`CARD_TOO_LARGE`)
 * and costs a new thread, not the process. Refusals come back as the same AppErrors.
 */
import { Worker } from 'node:worker_threads';
import { AppError, type ErrorCode, type FieldIssue, ValidationError } from '../core/errors.js';
import { cardTooLarge } from './card-errors.js';
import type { CardLimits } from './card-limits.js';
import type { CardMimeType, CharacterCard } from './card-types.js';
import type { ImportFields } from '../http/card-import-body.js';
import type { CardReply, CardRequest, CardSource } from './card-worker.js';

/** From source the worker module is TypeScript, in a build JavaScript: the same file name either way. */
const workerModule = new URL(`./card-worker${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url);

/**
 * Loads the worker module and starts it. From TypeScript sources (tsx, vitest) the thread first
 * registers tsx, which this thread does not inherit under vitest; a build needs nothing.
 */
const bootstrap = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  if (workerData.module.endsWith('.ts')) (await import('tsx/esm/api')).register();
  (await import(workerData.module)).serve();
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ startFailed: String((error && error.stack) || error) }));
`;

interface Pending {
  resolve: (read: { card: CharacterCard; fields?: ImportFields | undefined }) => void;
  reject: (reason: unknown) => void;
}

interface Running {
  worker: Worker;
  ready: Promise<void>;
  pending: Map<number, Pending>;
}

export interface CardThreadOptions {
  /** The thread's heap (V8's old generation); the largest card the import takes needs about a quarter of the default. */
  maxMemoryMegabytes: number;
}

export class CardThread {
  #running: Running | undefined;
  #nextId = 1;

  constructor(private readonly options: CardThreadOptions = { maxMemoryMegabytes: 512 }) {}

  /** Reads a card file as `readCard` does. */
  async readFile(bytes: Uint8Array, mimeType: CardMimeType, limits: CardLimits): Promise<CharacterCard> {
    // The bytes go over as a buffer of their own (a Buffer may be a view into a larger pool), moved, not copied again.
    return (await this.#read({ kind: 'file', bytes: new Uint8Array(bytes), mimeType }, limits)).card;
  }

  /**
   * Reads the body of the API's import (`readImportBody`) and the card it carries; refused as
   * `readJson` and `readCard` refuse. A body that is the whole of its buffer is moved to the
   * thread, not copied: the caller's view is empty afterwards.
   */
  async readImportBody(body: Uint8Array, limits: CardLimits): Promise<{ fields: ImportFields; card: CharacterCard }> {
    const whole = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength && body.buffer instanceof ArrayBuffer;
    const { card, fields } = await this.#read({ kind: 'import-body', body: whole ? body : new Uint8Array(body) }, limits);
    if (fields === undefined) throw new Error('The card thread answered an import body without its fields.');
    return { fields, card };
  }

  async #read(source: CardSource, limits: CardLimits): Promise<{ card: CharacterCard; fields?: ImportFields | undefined }> {
    const running = this.#start();
    await running.ready;
    // The thread may have stopped while this waited for its start.
    if (this.#running !== running) return this.#read(source, limits);
    const id = this.#nextId++;
    const answered = new Promise<{ card: CharacterCard; fields?: ImportFields | undefined }>((resolve, reject) => running.pending.set(id, { resolve, reject }));
    if (running.pending.size === 1) running.worker.ref();
    const bytes = source.kind === 'file' ? source.bytes : source.body;
    running.worker.postMessage({ id, source, limits } satisfies CardRequest, [bytes.buffer as ArrayBuffer]);
    return answered;
  }

  /** Stops the thread; cards being read fail. A later card starts a new one. */
  async close(): Promise<void> {
    const running = this.#running;
    if (running === undefined) return;
    this.#stop(running, new Error('The card thread was closed.'));
    await running.worker.terminate();
  }

  #start(): Running {
    if (this.#running !== undefined) return this.#running;
    const worker = new Worker(bootstrap, {
      eval: true,
      workerData: { module: workerModule.href },
      resourceLimits: { maxOldGenerationSizeMb: this.options.maxMemoryMegabytes },
    });
    let started: () => void = () => undefined;
    let failed: (reason: unknown) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    // Whoever awaits `ready` sees the failure; this keeps it from counting as unhandled.
    ready.catch(() => undefined);
    const running: Running = { worker, ready, pending: new Map() };
    this.#running = running;
    worker.on('message', (message: CardReply | { ready: true } | { startFailed: string }) => {
      if ('ready' in message) {
        if (running.pending.size === 0) worker.unref();
        started();
        return;
      }
      if ('startFailed' in message) {
        failed(new Error(`The card thread could not start: ${message.startFailed}`));
        this.#stop(running, new Error(`The card thread could not start: ${message.startFailed}`));
        void worker.terminate();
        return;
      }
      const pending = running.pending.get(message.id);
      if (pending === undefined) return;
      running.pending.delete(message.id);
      // An idle thread must not keep the process alive.
      if (running.pending.size === 0) worker.unref();
      if ('card' in message) pending.resolve(message);
      else if ('refusal' in message) pending.reject(appError(message.refusal));
      else pending.reject(Object.assign(new Error(`Reading a card failed: ${message.failure.message}`), { stack: message.failure.stack }));
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const reason =
        error.code === 'ERR_WORKER_OUT_OF_MEMORY'
          ? cardTooLarge(`Reading this card took more than ${this.options.maxMemoryMegabytes} MB of memory`, 'memoryMegabytes', this.options.maxMemoryMegabytes, error)
          : new Error(`The card thread failed: ${error.message}`, { cause: error });
      failed(reason);
      this.#stop(running, reason);
    });
    worker.on('exit', (code) => {
      const reason = new Error(`The card thread stopped (exit code ${code}).`);
      failed(reason);
      this.#stop(running, reason);
    });
    return running;
  }

  /** Fails every card `running` was reading and forgets it, once. */
  #stop(running: Running, reason: unknown): void {
    if (this.#running === running) this.#running = undefined;
    for (const pending of running.pending.values()) pending.reject(reason);
    running.pending.clear();
  }
}

function appError(refusal: { code: ErrorCode; message: string; details: Record<string, unknown> | undefined }): AppError {
  if (refusal.code === 'VALIDATION_FAILED' && Array.isArray(refusal.details?.fields)) return new ValidationError(refusal.details.fields as FieldIssue[]);
  return new AppError(refusal.code, refusal.message, refusal.details === undefined ? {} : { details: refusal.details });
}

/** The process's one card thread. */
export const cardThread = new CardThread();
