import { type Actor, actsFor } from '../actor.js';
import { AppError, ValidationError, notFound } from '../errors.js';
import type { Clock, IdGenerator } from '../ports.js';
import type { JobRecord, JobStatus, OutputFeedback, TransactionRecord } from '../records.js';
import type { JobChange, Repositories, RepositoryStore } from '../repositories.js';

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

/** How often a waiter reads a job again in case a signal from another process was missed. */
const pollMs = 1_000;

/**
 * Jobs as stored records: creation with its charge, reads, status changes and the events
 * front ends follow, from this process and (through the store's job signals) from every other.
 * Running jobs is the `JobRunner`'s part.
 */
export class Jobs {
  readonly #listeners = new Set<JobListener>();
  readonly #progress = new Map<string, number>();
  /** What was last told of each job, so a signal about a change already told is not told twice. */
  readonly #told = new Map<string, string>();
  #stopListening: (() => void) | undefined;

  constructor(
    private readonly store: RepositoryStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
  ) {}

  /** Hears job changes made by every process (this one's are told at once, without it). */
  listen(): void {
    this.#stopListening ??= this.store.onJobChanged((jobId) => {
      if (this.#listeners.size === 0) return;
      this.find(jobId).then(
        (job) => job && this.#emit(job),
        () => undefined,
      );
    });
  }

  stopListening(): void {
    this.#stopListening?.();
    this.#stopListening = undefined;
  }

  /**
   * Writes the job and charges it in one transaction: no worker ever sees an unpaid job, and a
   * short balance leaves no job behind. `alsoStore` adds what belongs with the job (a face
   * model) to the same transaction.
   */
  async create(
    newJob: NewJob,
    cost: number,
    reason: string,
    alsoStore?: (repositories: Repositories, job: JobRecord) => Promise<void>,
  ): Promise<{ job: JobRecord; transaction: TransactionRecord }> {
    const id = this.ids.uuid();
    const now = this.clock.nowMillis();
    const transactionId = this.ids.uuid();
    const job: JobRecord = {
      ...newJob,
      id,
      createdMillis: now,
      status: 'CREATED',
      statuses: [{ id: this.ids.uuid(), status: 'CREATED', createdMillis: now }],
      outputFiles: [],
      transactionId,
      externalId: null,
      startedMillis: null,
      failure: null,
      settled: false,
    };
    const transaction = await this.store.transaction(async (repositories) => {
      await repositories.jobs.create(job);
      const debit = await repositories.ledger.debit({
        id: transactionId,
        accountId: newJob.accountId,
        type: 'debit',
        amount: cost,
        reason,
        createdMillis: now,
        refundOf: null,
        reference: id,
      });
      await alsoStore?.(repositories, job);
      // Heard at commit: an idle runner in any process wakes for it.
      await repositories.signals.jobChanged(id);
      return debit;
    });
    this.#emit(job);
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
    return this.store.jobs.get(jobId);
  }

  /** The account's jobs, newest first, `limit` at a time. */
  async list(accountId: string, limit: number, cursor?: string): Promise<JobPage> {
    if (cursor !== undefined && !/^\d{1,15}$/.test(cursor)) throw ValidationError.field('query.cursor', 'is not a cursor this API gave out');
    const page = await this.store.jobs.listFor(accountId, { limit, cursor });
    return page.nextCursor === null ? { jobs: page.jobs } : { jobs: page.jobs, nextCursor: page.nextCursor };
  }

  /** Changes fields of a job that do not move its status, and tells the listeners everywhere. */
  async update(jobId: string, change: JobChange | ((job: JobRecord) => JobChange)): Promise<JobRecord> {
    const job = await this.store.transaction(async (repositories) => {
      const updated = await repositories.jobs.update(jobId, change);
      await repositories.signals.jobChanged(jobId);
      return updated;
    });
    this.#emit(job);
    return job;
  }

  /**
   * Moves a job to `status`, newest first in its history. A final job does not move again:
   * the first final status wins (a cancel racing a success, in any process), and the answer
   * is undefined for the loser.
   */
  async transition(jobId: string, status: JobStatus, change: JobChange = {}): Promise<JobRecord | undefined> {
    const entry = { id: this.ids.uuid(), status, createdMillis: this.clock.nowMillis() };
    const job = await this.store.transaction(async (repositories) => {
      const moved = await repositories.jobs.transition(jobId, entry, change);
      if (moved) await repositories.signals.jobChanged(jobId);
      return moved;
    });
    if (job) {
      if (isFinal(job)) this.#progress.delete(jobId);
      this.#emit(job);
    }
    return job;
  }

  /** Marks a final job settled (refunded and finished); true only for the one caller that did it. */
  async settle(jobId: string): Promise<boolean> {
    const settled = await this.store.transaction(async (repositories) => {
      const done = await repositories.jobs.settle(jobId);
      if (done) await repositories.signals.jobChanged(jobId);
      return done;
    });
    const job = settled ? await this.find(jobId) : undefined;
    if (job) this.#emit(job);
    return settled;
  }

  /** How many jobs wait ahead of this one in the shared queue (0: next), or undefined if it does not wait. */
  position(job: JobRecord): Promise<number | undefined> {
    return this.store.jobs.waitingAhead(job.id, this.clock.nowMillis());
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
   * `timeoutMs` passes first. Heard from whichever process runs it, with a read every second
   * as the fallback for a signal that never came.
   */
  async waitForFinal(jobId: string, timeoutMs: number): Promise<JobRecord | undefined> {
    let unsubscribe: () => void = () => undefined;
    let timer: NodeJS.Timeout | undefined;
    let poll: NodeJS.Timeout | undefined;
    try {
      return await new Promise<JobRecord | undefined>((resolve, reject) => {
        const check = (job: JobRecord | undefined) => {
          if (job && job.id === jobId && isFinal(job) && job.settled) resolve(job);
        };
        unsubscribe = this.subscribe(({ job }) => check(job));
        timer = setTimeout(() => resolve(undefined), timeoutMs);
        // Read after subscribing, so a job finishing in between is not missed.
        this.find(jobId).then(check, reject);
        poll = setInterval(() => this.find(jobId).then(check, () => undefined), pollMs);
      });
    } finally {
      unsubscribe();
      clearTimeout(timer);
      clearInterval(poll);
    }
  }

  #emit(job: JobRecord): void {
    const told = `${job.status}:${job.statuses.length}:${job.settled}:${job.outputFiles.length}:${job.externalId}:${this.#progress.get(job.id) ?? ''}:${JSON.stringify(job.outputFiles.map((file) => file.feedback))}`;
    if (this.#told.get(job.id) === told) return;
    if (this.#told.size > 10_000) this.#told.clear();
    this.#told.set(job.id, told);
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
