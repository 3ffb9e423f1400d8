import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, EngineError, ServiceStopping } from '../errors.js';
import { keys } from '../keys.js';
import type { Ledger } from '../ledger.js';
import type { Clock, EngineFile, EngineRun, FileStore, Logger, Store } from '../ports.js';
import type { JobRecord, JobType, OutputFileRecord } from '../records.js';
import { type Jobs, isFinal } from './jobs.js';

/** What actually does the work of one job type: an image engine or a face trainer. */
export interface JobWorker {
  readonly provider: string;
  readonly concurrency: number;
  /** How long one job may run, from its start, before it fails. */
  readonly timeLimitMs: number;
  /** Runs the job at the engine; the files it returns become the job's outputs. */
  run(job: JobRecord, run: EngineRun): Promise<EngineFile[]>;
  /** Applies what a final job implies beyond the job itself (a face model's state); idempotent. */
  settle?(job: JobRecord): Promise<void>;
}

export interface JobRunnerOptions {
  /** Attempts for failures the engine says may pass (unreachable, 5xx, 429); then the job fails. */
  attempts: number;
  /** First wait between attempts; doubled each time. */
  retryDelayMs: number;
}

export const defaultJobRunnerOptions: JobRunnerOptions = { attempts: 3, retryDelayMs: 2_000 };

class Canceled extends AppError {
  constructor() {
    super('CONFLICT', 'The job was canceled.');
  }
}

interface Lane {
  worker: JobWorker;
  /** Job ids waiting, oldest first. */
  waiting: string[];
  running: Map<string, AbortController>;
}

/**
 * Runs jobs on their engines with bounded concurrency per engine, in creation order, and
 * brings every job to a final, settled state: a failure or a cancel is refunded exactly
 * once, and a restart picks up what the last process left (see `recover`).
 */
export class JobRunner {
  readonly #lanes = new Map<JobType, Lane>();
  readonly #runs = new Set<Promise<void>>();
  #stopping = false;

  constructor(
    private readonly jobs: Jobs,
    private readonly store: Store,
    private readonly files: FileStore,
    private readonly ledger: Ledger,
    private readonly clock: Clock,
    private readonly logger: Logger,
    workers: Partial<Record<JobType, JobWorker>>,
    private readonly options: JobRunnerOptions = defaultJobRunnerOptions,
  ) {
    for (const [type, worker] of Object.entries(workers) as Array<[JobType, JobWorker]>) {
      this.#lanes.set(type, { worker, waiting: [], running: new Map() });
    }
  }

  /** Whether jobs of `type` can run here (their engine is configured). */
  handles(type: JobType): boolean {
    return this.#lanes.has(type);
  }

  /** Queues a charged job; it starts as soon as its engine has room. */
  enqueue(job: JobRecord): void {
    const lane = this.#lanes.get(job.type);
    if (!lane || this.#stopping) return;
    if (lane.waiting.includes(job.id) || lane.running.has(job.id)) return;
    lane.waiting.push(job.id);
    this.#pump(lane);
  }

  /** How many jobs are ahead of this one in its queue (0: next), or undefined if not waiting. */
  position(job: JobRecord): number | undefined {
    const index = this.#lanes.get(job.type)?.waiting.indexOf(job.id) ?? -1;
    return index < 0 ? undefined : index;
  }

  /** Cancels a job that is not final yet; its charge is refunded. */
  async cancel(job: JobRecord): Promise<JobRecord> {
    if (isFinal(job)) {
      throw new AppError('CONFLICT', `Job ${job.id} is already ${job.status} and cannot be canceled.`, { details: { status: job.status } });
    }
    const lane = this.#lanes.get(job.type);
    const running = lane?.running.get(job.id);
    if (running) {
      running.abort(new Canceled());
    } else if (lane) {
      lane.waiting = lane.waiting.filter((id) => id !== job.id);
    }
    const canceled = await this.jobs.transition(job.id, 'CANCELED', { failure: null });
    const final = canceled ?? (await this.jobs.find(job.id)) ?? job;
    if (canceled) await this.#settle(canceled);
    if (final.status !== 'CANCELED') {
      throw new AppError('CONFLICT', `Job ${job.id} finished as ${final.status} before it could be canceled.`, { details: { status: final.status } });
    }
    return final;
  }

  /**
   * Picks up after the last process: charges a crash interrupted are reconciled, final jobs
   * are settled, waiting jobs are queued and running ones followed again at their engine.
   * Everything before the stored mark is known settled and is not read again.
   */
  async recover(): Promise<{ resumed: number; settled: number }> {
    const mark = (await this.store.get<number>(keys.jobQueueSettled())) ?? 0;
    const { end } = await this.store.bounds(keys.jobQueue());
    const ids = await this.store.range<string>(keys.jobQueue(), mark, end);
    const found = await this.store.getMany<JobRecord>(ids.map((id) => keys.job(id)));
    let firstOpen = -1;
    let resumed = 0;
    let settled = 0;
    for (const [offset, stored] of found.entries()) {
      let job = stored;
      if (job && job.transactionId === null) job = await this.#reconcileCharge(job);
      if (!job) continue;
      if (isFinal(job)) {
        if (!job.settled) {
          await this.#settle(job);
          settled += 1;
        }
        continue;
      }
      if (firstOpen < 0) firstOpen = offset;
      if (this.handles(job.type)) {
        this.enqueue(job);
        resumed += 1;
      } else {
        await this.#fail(job, new AppError('NOT_CONFIGURED', `No engine for ${job.type} jobs is configured any more.`));
      }
    }
    await this.store.set(keys.jobQueueSettled(), firstOpen < 0 ? end : mark + firstOpen);
    return { resumed, settled };
  }

  /**
   * Stops taking work. Running jobs stay IN_PROGRESS at their engines and are followed again
   * after the next start.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    for (const lane of this.#lanes.values()) {
      lane.waiting = [];
      for (const controller of lane.running.values()) controller.abort(new ServiceStopping());
    }
    await Promise.allSettled([...this.#runs]);
  }

  /** Resolves when no job is running (for tests and benchmarks). */
  async idle(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled([...this.#runs]);
  }

  #pump(lane: Lane): void {
    while (!this.#stopping && lane.running.size < lane.worker.concurrency && lane.waiting.length > 0) {
      const jobId = lane.waiting.shift()!;
      const controller = new AbortController();
      lane.running.set(jobId, controller);
      const run = this.#run(lane.worker, jobId, controller)
        .catch((error: unknown) => this.logger.error({ err: error, jobId }, 'job run failed unexpectedly'))
        .finally(() => {
          lane.running.delete(jobId);
          this.#runs.delete(run);
          this.#pump(lane);
        });
      this.#runs.add(run);
    }
  }

  async #run(worker: JobWorker, jobId: string, controller: AbortController): Promise<void> {
    let job = await this.jobs.find(jobId);
    if (!job || isFinal(job)) return;
    if (job.status === 'CREATED') {
      job = await this.jobs.transition(jobId, 'IN_PROGRESS', { startedMillis: this.clock.nowMillis() });
      if (!job) return;
    }
    const startedMillis = job.startedMillis ?? this.clock.nowMillis();
    const remainingMs = startedMillis + worker.timeLimitMs - this.clock.nowMillis();
    const timeLimit = new AppError(
      'ENGINE_TIMEOUT',
      `The ${worker.provider} engine did not finish within ${Math.round(worker.timeLimitMs / 1000)} s, so the job was stopped.`,
    );
    if (remainingMs <= 0) {
      await this.#fail(job, timeLimit);
      return;
    }
    const timer = setTimeout(() => controller.abort(timeLimit), remainingMs);
    const log = { jobId, type: job.type, provider: worker.provider };
    try {
      for (let attempt = 1; ; attempt += 1) {
        try {
          const outputs = await worker.run(job, this.#engineRun(job, controller.signal));
          // Recorded even while stopping: the outputs are ours now, and engine URLs expire.
          const outputFiles = await this.#storeOutputs(job, outputs);
          // A success with nothing more to do is settled in the same write.
          const done = await this.jobs.transition(jobId, 'SUCCESS', { outputFiles, settled: worker.settle === undefined });
          if (done && !done.settled) await this.#settle(done);
          this.logger.info({ ...log, outputs: outputFiles.length }, 'job succeeded');
          return;
        } catch (error) {
          const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
          if (this.#stopping || reason instanceof ServiceStopping) return;
          if (reason instanceof Canceled) return; // `cancel` moved and settled the job
          job = (await this.jobs.find(jobId)) ?? job;
          if (isFinal(job)) return;
          const retryable = reason instanceof EngineError && reason.retryable && !controller.signal.aborted;
          if (retryable && attempt < this.options.attempts) {
            this.logger.warn({ ...log, err: reason, attempt }, 'job attempt failed; retrying');
            const waited = await sleep(this.options.retryDelayMs * 2 ** (attempt - 1), true, { signal: controller.signal }).catch(() => false);
            if (waited) continue;
          }
          const failure = controller.signal.aborted ? controller.signal.reason : reason;
          if (failure instanceof ServiceStopping || failure instanceof Canceled) return;
          this.logger.warn({ ...log, err: failure }, 'job failed');
          await this.#fail(job, failure);
          return;
        }
      }
    } finally {
      clearTimeout(timer);
    }
  }

  #engineRun(job: JobRecord, signal: AbortSignal): EngineRun {
    return {
      signal,
      resumeId: job.externalId ?? undefined,
      submitted: async (externalId) => {
        if (job.externalId !== externalId) job = await this.jobs.update(job.id, { externalId });
      },
      progress: (fraction) => this.jobs.reportProgress(job, fraction),
    };
  }

  async #storeOutputs(job: JobRecord, outputs: readonly EngineFile[]): Promise<OutputFileRecord[]> {
    const createdMillis = this.clock.nowMillis();
    const prefix = job.type === 'FACE_MODEL_TRAINING' ? 'trained-model' : 'image';
    return Promise.all(
      outputs.map(async (output, index) => {
        const file = await this.files.put(output.data, output.mimeType);
        const extension = file.key.slice(file.key.lastIndexOf('.') + 1);
        const name = outputs.length === 1 && prefix === 'trained-model' ? `${prefix}.${extension}` : `${prefix}-${index + 1}.${extension}`;
        return { name, key: file.key, mimeType: file.mimeType, size: file.size, createdMillis, feedback: { like: null, feedback: null } };
      }),
    );
  }

  async #fail(job: JobRecord, error: unknown): Promise<void> {
    const failure =
      error instanceof AppError
        ? { code: error.code, message: error.message }
        : { code: 'INTERNAL', message: 'The job failed on our side.' };
    const failed = await this.jobs.transition(job.id, 'FAILED', { failure });
    if (failed) await this.#settle(failed);
  }

  /** Refunds a failed or canceled job and lets its worker finish its part; marks it settled. */
  async #settle(job: JobRecord): Promise<void> {
    if ((job.status === 'FAILED' || job.status === 'CANCELED') && job.transactionId) {
      await this.ledger.refund(job.transactionId, `Refund: job ${job.id} ${job.status === 'FAILED' ? 'failed' : 'was canceled'}`);
    }
    await this.#lanes.get(job.type)?.worker.settle?.(job);
    await this.jobs.update(job.id, { settled: true });
  }

  /** A job written but not marked charged: attach its debit if the crash came after it, else drop it. */
  async #reconcileCharge(job: JobRecord): Promise<JobRecord | undefined> {
    const debit = await this.ledger.debitFor(job.accountId, job.id);
    if (debit) return this.jobs.update(job.id, { transactionId: debit.id });
    await this.store.delete(keys.job(job.id));
    return undefined;
  }
}
