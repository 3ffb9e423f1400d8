/**
 * Lorebook regular-expression keys run in a worker thread, with V8's own engine (fast, and it
 * reads every pattern SillyTavern's cards hold, flag `i` and backreferences included), so a
 * pattern that backtracks for minutes blocks that thread and never the process. A prompt waits
 * at most its bound: past it the checks not done count as undecided, the thread is ended (a
 * running test cannot be interrupted otherwise) and the next prompt starts a fresh one. The
 * pattern that was running is refused from then on, so it is paid once per process, not once a
 * prompt. One runner serves the process; its thread starts with the first regular expression.
 */
import { Worker } from 'node:worker_threads';
import type { Logger, RegexCheck, RegexKey, RegexKeyRunner } from '../../core/ports.js';
import { regexWorkerSource } from './regex-worker-source.js';

export interface WorkerRegexRunnerOptions {
  /** The wait one prompt's regex keys may cost in all (`LOREBOOK_REGEX_BOUND_MS`). */
  boundMs: number;
  logger: Logger;
  /** Refused patterns remembered; past this the least recently met are forgotten (and learned again if met). */
  refusedLimit?: number;
}

const defaultRefusedLimit = 1_000;
/** Patterns a thread keeps compiled; past this it forgets them all and is told them again. */
const compiledLimit = 5_000;

interface Running {
  thread: Worker;
  /** False when the thread could not start. */
  online: Promise<boolean>;
  /** Where the thread is: see regex-worker-source.ts. */
  progress: Float64Array;
  /** The number the thread knows each pattern by. */
  known: Map<string, number>;
  /** Requests sent and not yet answered, by sequence: their keys, check by check, and who waits. */
  requests: Map<number, { keys: RegexKey[]; answered: () => void }>;
  ended: boolean;
}

export class WorkerRegexRunner implements RegexKeyRunner {
  readonly boundMs: number;
  readonly #refused = new Map<string, string>();
  readonly #refusedLimit: number;
  #running: Running | undefined;
  #late = 0;
  #sequence = 0;
  #busy = 0;

  constructor(private readonly options: WorkerRegexRunnerOptions) {
    this.boundMs = options.boundMs;
    this.#refusedLimit = options.refusedLimit ?? defaultRefusedLimit;
  }

  /** How many times a pattern outran the bound since this runner was made (each time its thread was ended). */
  get lateRuns(): number {
    return this.#late;
  }

  refusal(key: RegexKey): string | undefined {
    const id = idOf(key);
    const reason = this.#refused.get(id);
    if (reason !== undefined) {
      // Met again: the last to be forgotten.
      this.#refused.delete(id);
      this.#refused.set(id, reason);
    }
    return reason;
  }

  async run(texts: readonly string[], checks: readonly RegexCheck[], timeoutMs: number): Promise<(boolean | undefined)[]> {
    const results: (boolean | undefined)[] = checks.map(() => undefined);
    const positions = checks.flatMap((check, index) => (this.#refused.has(idOf(check.key)) ? [] : [index]));
    if (positions.length === 0 || timeoutMs <= 0) return results;
    const running = (this.#running ??= this.#start());
    this.#hold(1);
    try {
      // A thread's start (tens of milliseconds, once) is no pattern's doing: the bound counts from the request.
      if (!(await running.online) || running.ended) return results;
      const request = this.#request(running, texts, checks, positions);
      let timer: NodeJS.Timeout | undefined;
      const answered = new Promise<boolean>((resolve) => running.requests.set(request.sequence, { keys: request.keys, answered: () => resolve(true) }));
      const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      running.thread.postMessage(request.message);
      if (!(await Promise.race([answered, late]))) this.#examine(running);
      clearTimeout(timer);
      positions.forEach((position, index) => {
        const outcome = request.results[index];
        results[position] = outcome === 0 ? undefined : outcome === 2;
      });
      return results;
    } finally {
      this.#hold(-1);
    }
  }

  /** Ends the thread (at shutdown); a later run starts another. */
  close(): void {
    if (this.#running) this.#end(this.#running);
  }

  #start(): Running {
    const progress = new Float64Array(new SharedArrayBuffer(3 * Float64Array.BYTES_PER_ELEMENT));
    progress[0] = -1;
    const thread = new Worker(regexWorkerSource, { eval: true, workerData: { progress: progress.buffer }, resourceLimits: { maxOldGenerationSizeMb: 64 } });
    const running: Running = { thread, online: Promise.resolve(false), progress, known: new Map(), requests: new Map(), ended: false };
    running.online = new Promise((resolve) => {
      thread.once('online', () => resolve(true));
      thread.once('exit', () => resolve(false));
    });
    thread.on('message', (sequence: number) => {
      running.requests.get(sequence)?.answered();
      running.requests.delete(sequence);
    });
    thread.on('error', (error) => {
      this.options.logger.warn({ err: error }, 'the lorebook regular-expression thread failed; the next prompt starts another');
      this.#end(running);
    });
    thread.on('exit', () => this.#end(running));
    return running;
  }

  #request(running: Running, texts: readonly string[], checks: readonly RegexCheck[], positions: number[]) {
    const forget = running.known.size + positions.length > compiledLimit;
    if (forget) running.known.clear();
    const definitions: [number, string, string][] = [];
    const tasks = new Int32Array(positions.length * 2);
    const keys = positions.map((position, index) => {
      const { key, text } = checks[position]!;
      const id = idOf(key);
      let number = running.known.get(id);
      if (number === undefined) {
        number = running.known.size;
        running.known.set(id, number);
        definitions.push([number, key.source, key.flags]);
      }
      tasks[2 * index] = number;
      tasks[2 * index + 1] = text;
      return key;
    });
    const sequence = ++this.#sequence;
    const results = new Int8Array(new SharedArrayBuffer(positions.length));
    return { sequence, keys, results, message: { sequence, forget, definitions, texts, tasks, results: results.buffer } };
  }

  /**
   * A request is late: the pattern the thread is running is refused and the thread ended, once it
   * has run for half the bound. Sooner, it may have only just begun (behind others, or on a busy
   * machine), so it is looked at again when it would have run that long.
   */
  #examine(running: Running): void {
    if (running.ended) return;
    const [current = -1, index = 0, startedAt = 0] = running.progress;
    const request = running.requests.get(current);
    if (request === undefined) return;
    const ran = performance.timeOrigin + performance.now() - startedAt;
    const patience = this.boundMs / 2;
    if (ran < patience) {
      setTimeout(() => this.#examine(running), patience - ran + 1).unref();
      return;
    }
    const key = request.keys[index];
    if (key) this.#refuse(key, ran);
    this.#late++;
    this.#end(running);
  }

  #refuse(key: RegexKey, ranMs: number): void {
    const id = idOf(key);
    if (this.#refused.has(id)) return;
    if (this.#refused.size >= this.#refusedLimit) this.#refused.delete(this.#refused.keys().next().value!);
    this.#refused.set(id, `it ran for more than ${Math.round(this.boundMs / 2)} ms on a message (its backtracking can last minutes); write it more simply`);
    // The pattern and never the message: what people write stays out of the logs.
    this.options.logger.warn({ pattern: key.source.slice(0, 200), flags: key.flags, ranMs: Math.round(ranMs), boundMs: this.boundMs }, 'a lorebook regular-expression key ran too long; this process no longer runs it');
  }

  #end(running: Running): void {
    if (running.ended) return;
    running.ended = true;
    if (this.#running === running) this.#running = undefined;
    void running.thread.terminate();
    for (const request of running.requests.values()) request.answered();
    running.requests.clear();
  }

  /** The thread keeps the process alive only while a prompt waits on it. */
  #hold(change: number): void {
    this.#busy += change;
    if (this.#busy > 0) this.#running?.thread.ref();
    else this.#running?.thread.unref();
  }
}

function idOf(key: RegexKey): string {
  return `${key.flags}/${key.source}`;
}
