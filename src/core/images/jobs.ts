import { type Actor, actsFor } from '../actor.js';
import { AppError, ValidationError, notFound } from '../errors.js';
import { keys } from '../keys.js';
import type { Ledger } from '../ledger.js';
import type { Clock, IdGenerator, Store } from '../ports.js';
import type { JobRecord, JobStatus, OutputFeedback, TransactionRecord } from '../records.js';

/** What listeners hear about a job: its record after every change, and live progress. */
export interface JobEvent {
  job: JobRecord;
  /** 0 to 1 while the engine reports progress; null otherwise. */
  progress: number | null;
}

export type JobListener = (event: JobEvent) => void;

export const finalStatuses: ReadonlySet<JobStatus> = new Set(['SUCCESS', 'FAILED', 'CANCELED']);

export function isFinal(job: JobRecord): boolean {
  return finalStatuses.has(job.status);
}

export interface JobPage {
  jobs: JobRecord[];
  /** Pass back as `cursor` for the next (older) page; absent on the last page. */
  nextCursor?: string;
}

/** What a new job is, before the store and the ledger give it an id, a status and a debit. */
export type NewJob = Pick<JobRecord, 'type' | 'payload' | 'faceModel' | 'photos' | 'clientId'> & { accountId: string };

export const feedbackLimits = { characters: 2000 } as const;

/**
 * Jobs as stored records: creation with its charge, reads, status changes and the events
 * front ends follow. Running jobs is the `JobRunner`'s part.
 */
export class Jobs {
  readonly #listeners = new Set<JobListener>();
  readonly #progress = new Map<string, number>();

  constructor(
    private readonly store: Store,
    private readonly ledger: Ledger,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  /**
   * Writes the job, then charges it. The job is in the work queue before the debit, so a
   * crash in between leaves a trace recovery reconciles (`reconcileCharge`); a short
   * balance removes the job again and nothing is charged.
   */
  async create(newJob: NewJob, cost: number, reason: string): Promise<{ job: JobRecord; transaction: TransactionRecord }> {
    const id = this.ids.uuid();
    const now = this.clock.nowMillis();
    const draft: JobRecord = {
      ...newJob,
      id,
      createdMillis: now,
      status: 'CREATED',
      statuses: [{ id: this.ids.uuid(), status: 'CREATED', createdMillis: now }],
      outputFiles: [],
      transactionId: null,
      externalId: null,
      startedMillis: null,
      failure: null,
      settled: false,
    };
    await this.store.set(keys.job(id), draft);
    await this.store.append(keys.jobQueue(), () => id);
    await this.store.append(keys.accountJobs(newJob.accountId), () => id);
    let transaction: TransactionRecord;
    try {
      transaction = await this.ledger.debit(newJob.accountId, cost, reason, id);
    } catch (error) {
      await this.store.delete(keys.job(id));
      throw error;
    }
    const job = await this.update(id, { transactionId: transaction.id });
    return { job, transaction };
  }

  /** A job the actor may read: its own, or any for the admin. */
  async get(actor: Actor, jobId: string): Promise<JobRecord> {
    const job = await this.find(jobId);
    if (!job || !actsFor(actor, job.accountId)) throw notFound('Job', jobId);
    return job;
  }

  /** A job by id, charged or not; for the runner and recovery. */
  find(jobId: string): Promise<JobRecord | undefined> {
    return this.store.get<JobRecord>(keys.job(jobId));
  }

  /** The account's jobs, newest first, `limit` at a time. */
  async list(accountId: string, limit: number, cursor?: string): Promise<JobPage> {
    const list = keys.accountJobs(accountId);
    const bounds = await this.store.bounds(list);
    let end = bounds.end;
    if (cursor !== undefined) {
      if (!/^\d{1,12}$/.test(cursor)) throw ValidationError.field('query.cursor', 'is not a cursor this API gave out');
      end = Math.min(Number(cursor), bounds.end);
    }
    const start = Math.max(bounds.start, end - limit);
    const ids = await this.store.range<string>(list, start, end);
    const records = await this.store.getMany<JobRecord>(ids.reverse().map((id) => keys.job(id)));
    // Jobs refused for a short balance leave a hole; uncharged jobs are not the caller's yet.
    const jobs = records.filter((job): job is JobRecord => job !== undefined && job.transactionId !== null);
    return start > bounds.start ? { jobs, nextCursor: String(start) } : { jobs };
  }

  /** Changes fields of a job under its lock and tells the listeners. */
  async update(jobId: string, change: Partial<JobRecord> | ((job: JobRecord) => Partial<JobRecord>)): Promise<JobRecord> {
    const job = await this.store.withLock(keys.job(jobId), async () => {
      const current = await this.find(jobId);
      if (!current) throw notFound('Job', jobId);
      const updated = { ...current, ...(typeof change === 'function' ? change(current) : change) };
      await this.store.set(keys.job(jobId), updated);
      return updated;
    });
    this.#emit(job);
    return job;
  }

  /**
   * Moves a job to `status`, newest first in its history. A final job does not move again:
   * the first final status wins (a cancel racing a success, a timeout racing a failure),
   * and the answer is undefined for the loser.
   */
  async transition(jobId: string, status: JobStatus, change: Partial<JobRecord> = {}): Promise<JobRecord | undefined> {
    const job = await this.store.withLock(keys.job(jobId), async () => {
      const current = await this.find(jobId);
      if (!current || isFinal(current)) return undefined;
      const entry = { id: this.ids.uuid(), status, createdMillis: this.clock.nowMillis() };
      const updated: JobRecord = { ...current, ...change, status, statuses: [entry, ...current.statuses] };
      await this.store.set(keys.job(jobId), updated);
      return updated;
    });
    if (job) {
      if (isFinal(job)) this.#progress.delete(jobId);
      this.#emit(job);
    }
    return job;
  }

  /** Records a person's verdict on one output: `like` true/false and an optional comment. */
  async feedback(actor: Actor, jobId: string, name: string, feedback: Partial<OutputFeedback>): Promise<JobRecord> {
    if (feedback.feedback && feedback.feedback.length > feedbackLimits.characters) {
      throw ValidationError.field('feedback', `must be at most ${feedbackLimits.characters} characters`);
    }
    await this.get(actor, jobId);
    return this.update(jobId, (job) => {
      const index = job.outputFiles.findIndex((file) => file.name === name);
      if (index < 0) {
        throw new AppError('NOT_FOUND', `Job ${jobId} has no output named "${name}".`, {
          details: { outputs: job.outputFiles.map((file) => file.name) },
        });
      }
      const outputFiles = job.outputFiles.map((file, position) =>
        position === index
          ? {
              ...file,
              feedback: {
                like: feedback.like === undefined ? file.feedback.like : feedback.like,
                feedback: feedback.feedback === undefined ? file.feedback.feedback : feedback.feedback,
              },
            }
          : file,
      );
      return { outputFiles };
    });
  }

  /** Live progress of a running job, kept in memory only. */
  reportProgress(job: JobRecord, fraction: number): void {
    const progress = Math.min(1, Math.max(0, fraction));
    if (this.#progress.get(job.id) === progress) return;
    this.#progress.set(job.id, progress);
    this.#emit(job);
  }

  progressOf(jobId: string): number | null {
    return this.#progress.get(jobId) ?? null;
  }

  /** Hears every change of every job; returns the way to stop listening. */
  subscribe(listener: JobListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /**
   * The job once it is final and settled (a failure already refunded), or undefined when
   * `timeoutMs` passes first.
   */
  async waitForFinal(jobId: string, timeoutMs: number): Promise<JobRecord | undefined> {
    let unsubscribe: () => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await new Promise<JobRecord | undefined>((resolve, reject) => {
        unsubscribe = this.subscribe(({ job }) => {
          if (job.id === jobId && isFinal(job) && job.settled) resolve(job);
        });
        timer = setTimeout(() => resolve(undefined), timeoutMs);
        // Read after subscribing, so a job finishing in between is not missed.
        this.find(jobId).then((job) => {
          if (job && isFinal(job) && job.settled) resolve(job);
        }, reject);
      });
    } finally {
      unsubscribe();
      clearTimeout(timer);
    }
  }

  #emit(job: JobRecord): void {
    const event = { job, progress: this.#progress.get(job.id) ?? null };
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A front end's listener must not break the job's bookkeeping.
      }
    }
  }
}
