import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, EngineError, ServiceStopping } from '../errors.js';
import type { Ledger } from '../ledger.js';
import type { Clock, EngineFile, EngineRun, FileStore, IdGenerator, Logger } from '../ports.js';
import type { JobRecord, JobType, OutputFileRecord } from '../records.js';
import type { RepositoryStore } from '../repositories.js';
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
  /**
   * How long a claim holds a job unless renewed (renewed every third of it while the job
   * runs): a process that dies leaves its jobs to any other after at most this long.
   */
  leaseMs: number;
  /** How often the shared queue is read for work no signal announced (a dead holder's jobs). */
  claimPollMs: number;
  /** Names this runner's leases in the database (host and pid), so an operator can tell whose they are. */
  workerName?: string;
}

export const defaultJobRunnerOptions: JobRunnerOptions = { attempts: 3, retryDelayMs: 2_000, leaseMs: 30_000, claimPollMs: 2_000 };

class Canceled extends AppError {
  constructor() {
    super('CONFLICT', 'The job was canceled.');
  }
}

/** Another process took the job over (this one's lease expired unrenewed). */
class LeaseLost extends AppError {
  constructor() {
    super('CONFLICT', 'Another process took the job over.');
  }
}

interface Lane {
  worker: JobWorker;
  running: Map<string, AbortController>;
}

/**
 * Runs jobs on their engines with bounded concurrency per engine, oldest first, from the work
 * queue every process shares: a job is claimed by one runner at a time under a lease it
 * renews, so a process that dies (even by `kill -9`) leaves its jobs to the next claim after
 * the lease. Every job ends final and settled: a failure or a cancel is refunded exactly once.
 */
export class JobRunner {
  readonly #lanes = new Map<JobType, Lane>();
  readonly #runs = new Set<Promise<void>>();
  readonly #workerId: string;
  #started = false;
  #stopping = false;
  #claiming = false;
  #claimAgain = false;
  #poll: NodeJS.Timeout | undefined;
  #stopSignals: (() => void) | undefined;

  constructor(
    private readonly jobs: Jobs,
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly ledger: Ledger,
    private readonly clock: Clock,
    ids: IdGenerator,
    private readonly logger: Logger,
    workers: Partial<Record<JobType, JobWorker>>,
    private readonly options: JobRunnerOptions = defaultJobRunnerOptions,
  ) {
    this.#workerId = `${options.workerName ?? 'runner'}:${ids.uuid()}`;
    for (const [type, worker] of Object.entries(workers) as Array<[JobType, JobWorker]>) {
      this.#lanes.set(type, { worker, running: new Map() });
    }
  }

  /** Whether jobs of `type` can run here (their engine is configured). */
  handles(type: JobType): boolean {
    return this.#lanes.has(type);
  }

  /**
   * Starts taking jobs from the shared queue: at once, whenever any process signals a job
   * change, and every `claimPollMs` (for leases that expired unrenewed).
   */
  async start(): Promise<void> {
    if (this.#started || this.#lanes.size === 0) return;
    this.#started = true;
    this.#stopSignals = this.store.onJobChanged((jobId) => {
      this.#heard(jobId);
      this.wake();
    });
    this.#poll = setInterval(() => this.wake(), this.options.claimPollMs);
    this.#poll.unref();
    this.wake();
  }

  /** Looks for work now (a job was just created). */
  wake(): void {
    if (!this.#started || this.#stopping) return;
    if (this.#claiming) {
      this.#claimAgain = true;
      return;
    }
    this.#claiming = true;
    void (async () => {
      try {
        do {
          this.#claimAgain = false;
          await this.#claimWhileRoom();
        } while (this.#claimAgain && !this.#stopping);
      } catch (error) {
        this.logger.warn({ err: error }, 'claiming jobs failed; trying again shortly');
      } finally {
        this.#claiming = false;
      }
    })();
  }

  /** Cancels a job that is not final yet; its charge is refunded. */
  async cancel(job: JobRecord): Promise<JobRecord> {
    if (isFinal(job)) {
      throw new AppError('CONFLICT', `Job ${job.id} is already ${job.status} and cannot be canceled.`, { details: { status: job.status } });
    }
    // Running here: stopped at once. Running elsewhere: that runner hears the change and stops.
    this.#lanes.get(job.type)?.running.get(job.id)?.abort(new Canceled());
    const canceled = await this.jobs.transition(job.id, 'CANCELED', { failure: null });
    const final = canceled ?? (await this.jobs.find(job.id)) ?? job;
    if (canceled) await this.#settle(canceled);
    if (final.status !== 'CANCELED') {
      throw new AppError('CONFLICT', `Job ${job.id} finished as ${final.status} before it could be canceled.`, { details: { status: final.status } });
    }
    return final;
  }

  /**
   * Stops taking work. Running jobs stay IN_PROGRESS at their engines; their leases are let go,
   * so the next start, or another process at once, follows them again.
   */
  async stop(): Promise<void> {
    this.#stopping = true;
    clearInterval(this.#poll);
    this.#stopSignals?.();
    for (const lane of this.#lanes.values()) {
      for (const controller of lane.running.values()) controller.abort(new ServiceStopping());
    }
    await Promise.allSettled([...this.#runs]);
  }

  /** Resolves when no job is running (for tests and benchmarks). */
  async idle(): Promise<void> {
    while (this.#runs.size > 0) await Promise.allSettled([...this.#runs]);
  }

  async #claimWhileRoom(): Promise<void> {
    for (;;) {
      if (this.#stopping) return;
      const types = [...this.#lanes].filter(([, lane]) => lane.running.size < lane.worker.concurrency).map(([type]) => type);
      if (types.length === 0) return;
      // Each engine's concurrency holds across every worker process, not per process.
      const limits = Object.fromEntries([...this.#lanes].map(([type, lane]) => [type, lane.worker.concurrency]));
      const claimed = await this.store.jobs.claim({ workerId: this.#workerId, types, nowMillis: this.clock.nowMillis(), leaseMs: this.options.leaseMs, limits });
      if (!claimed) return;
      if (this.#stopping) {
        await this.store.jobs.releaseLease(claimed.job.id, this.#workerId);
        return;
      }
      if (claimed.claims > 1) this.logger.info({ jobId: claimed.job.id, claims: claimed.claims }, 'job taken over from an earlier holder');
      this.#begin(this.#lanes.get(claimed.job.type)!, claimed.job);
    }
  }

  /** Runs a claimed job, renewing its lease until it ends here. */
  #begin(lane: Lane, job: JobRecord): void {
    const controller = new AbortController();
    lane.running.set(job.id, controller);
    const renewal = setInterval(() => {
      this.store.jobs.renewLease(job.id, this.#workerId, this.clock.nowMillis(), this.options.leaseMs).then(
        (held) => {
          if (!held && !controller.signal.aborted) controller.abort(new LeaseLost());
        },
        (error: unknown) => this.logger.warn({ err: error, jobId: job.id }, 'renewing a job lease failed'),
      );
    }, Math.max(1, Math.floor(this.options.leaseMs / 3)));
    const run = (isFinal(job) ? this.#settle(job) : this.#run(lane.worker, job, controller))
      .catch((error: unknown) => this.logger.error({ err: error, jobId: job.id }, 'job run failed unexpectedly'))
      .finally(async () => {
        clearInterval(renewal);
        await this.store.jobs.releaseLease(job.id, this.#workerId).catch(() => undefined);
        lane.running.delete(job.id);
        this.#runs.delete(run);
        this.wake();
      });
    this.#runs.add(run);
  }

  /** A job running here that another process made final (a cancel) is stopped. */
  #heard(jobId: string): void {
    for (const lane of this.#lanes.values()) {
      const controller = lane.running.get(jobId);
      if (!controller) continue;
      this.jobs.find(jobId).then(
        (job) => {
          if (job && isFinal(job) && !controller.signal.aborted) controller.abort(new Canceled());
        },
        () => undefined,
      );
    }
  }

  async #run(worker: JobWorker, claimed: JobRecord, controller: AbortController): Promise<void> {
    const jobId = claimed.id;
    let job: JobRecord | undefined = claimed;
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
          const done = await this.jobs.transition(jobId, 'SUCCESS', { outputFiles });
          if (done) await this.#settle(done);
          this.logger.info({ ...log, outputs: outputFiles.length }, 'job succeeded');
          return;
        } catch (error) {
          const reason: unknown = controller.signal.aborted ? controller.signal.reason : error;
          if (this.#stopping || reason instanceof ServiceStopping) return;
          if (reason instanceof Canceled || reason instanceof LeaseLost) return; // the canceler, or the new holder, finishes the job
          job = (await this.jobs.find(jobId)) ?? job;
          if (isFinal(job)) return;
          const retryable = reason instanceof EngineError && reason.retryable && !controller.signal.aborted;
          if (retryable && attempt < this.options.attempts) {
            this.logger.warn({ ...log, err: reason, attempt }, 'job attempt failed; retrying');
            const waited = await sleep(this.options.retryDelayMs * 2 ** (attempt - 1), true, { signal: controller.signal }).catch(() => false);
            if (waited) continue;
          }
          const failure = controller.signal.aborted ? controller.signal.reason : reason;
          if (failure instanceof ServiceStopping || failure instanceof Canceled || failure instanceof LeaseLost) return;
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
    await this.jobs.settle(job.id);
  }
}
