/**
 * Running one Replicate task (a prediction or a training) to its end: create it (waiting out
 * rate limits as `retry-after` says), hand its id to the run, poll it, report progress from
 * the tqdm bars in its logs, and cancel it at Replicate when the run is aborted (unless the
 * service is stopping). A run that carries a `resumeId` follows that task instead of creating
 * another.
 */
import type { Dispatcher } from 'undici';
import { EngineError, type EnginePurpose } from '../../core/errors.js';
import type { EngineRun } from '../../core/ports.js';
import type { EngineTimeouts } from '../http.js';
import { type ImageHttp, createImageHttp, isSuccess } from './engine-http.js';
import { type ReplicateTask, errorText, isTerminal, taskOf } from './replicate-wire.js';
import { cancelsRemoteWork, forwardProgress, progressOfLogs, retryAfterMs, sleep } from './wait.js';

export type TaskKind = 'predictions' | 'trainings';

export interface ReplicateConnectionOptions extends EngineTimeouts {
  /** Default `https://api.replicate.com/v1`. */
  baseURL?: string;
  /** Sent as `Authorization: Bearer`. */
  apiToken: string;
  /** How many times a rate-limited (429) creation is tried again, after `retry-after` (default 3). */
  rateLimitRetries?: number;
  dispatcher?: Dispatcher;
}

export interface ReplicateTasks {
  readonly http: ImageHttp;
  /** Runs the task that `create` makes (or `run.resumeId` names) until it succeeds; throws otherwise. */
  run(kind: TaskKind, create: { target: string; body: unknown }, run: EngineRun): Promise<ReplicateTask>;
  close(): Promise<void>;
}

export const REPLICATE_PROVIDER = 'replicate';
const LABEL = 'Replicate';
/** Consecutive failed polls tolerated before a run gives up: one 502 must not waste a paid run. */
const POLL_FAILURES_TOLERATED = 3;
/** Longest single wait on a 429, and the wait when Replicate gives none. */
const MAX_RATE_LIMIT_WAIT_MS = 60_000;
const DEFAULT_RATE_LIMIT_WAIT_MS = 1_000;
const CANCEL_TIMEOUT_MS = 10_000;

/** Predictions and trainings over one connection pool; `pollIntervalMs` paces the polls. */
export function createReplicateTasks(options: ReplicateConnectionOptions, pollIntervalMs: number, purpose: EnginePurpose = 'image'): ReplicateTasks {
  const http = createImageHttp({
    provider: REPLICATE_PROVIDER,
    label: LABEL,
    purpose,
    baseURL: options.baseURL ?? 'https://api.replicate.com/v1',
    headers: { authorization: `Bearer ${options.apiToken}` },
    dispatcher: options.dispatcher,
    connectTimeoutMs: options.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs,
  });
  const rateLimitRetries = options.rateLimitRetries ?? 3;

  const readTask = (body: unknown): ReplicateTask => {
    const task = taskOf(body);
    if (task === undefined) throw http.client.error(`${LABEL} answered without a task id and status.`, { retryable: false });
    return task;
  };

  const create = async (target: string, body: unknown, signal: AbortSignal): Promise<ReplicateTask> => {
    for (let attempt = 0; ; attempt++) {
      // An abort while this request is out may leave a task at Replicate whose id we never learn.
      const answer = await http.exchange({ method: 'POST', target, json: body, headers: { accept: 'application/json' }, signal });
      if (isSuccess(answer)) return readTask(http.parse(answer));
      if (answer.status !== 429 || attempt >= rateLimitRetries) throw http.failure(answer);
      const wait = retryAfterMs(answer.headers['retry-after']) ?? DEFAULT_RATE_LIMIT_WAIT_MS;
      await sleep(Math.min(wait, MAX_RATE_LIMIT_WAIT_MS), signal);
    }
  };

  const get = async (kind: TaskKind, id: string, signal: AbortSignal): Promise<ReplicateTask> =>
    readTask(await http.json({ target: `/${kind}/${encodeURIComponent(id)}`, signal }));

  /** The task to follow again, or undefined when it must be started over. */
  const resume = async (kind: TaskKind, id: string, signal: AbortSignal): Promise<ReplicateTask | undefined> => {
    const answer = await http.exchange({ target: `/${kind}/${encodeURIComponent(id)}`, headers: { accept: 'application/json' }, signal });
    if (answer.status === 404) return undefined;
    if (!isSuccess(answer)) throw http.failure(answer);
    const task = readTask(http.parse(answer));
    // Stopped before it finished (canceled as we shut down, or past its deadline): start over.
    return task.status === 'canceled' || task.status === 'aborted' ? undefined : task;
  };

  /** Best effort, on its own deadline: the run is being abandoned either way. */
  const cancel = async (kind: TaskKind, id: string): Promise<void> => {
    try {
      await http.exchange({ method: 'POST', target: `/${kind}/${encodeURIComponent(id)}/cancel`, signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) });
    } catch {
      // Nothing more can be done from here.
    }
  };

  const follow = async (kind: TaskKind, first: ReplicateTask, run: EngineRun): Promise<ReplicateTask> => {
    const { signal } = run;
    const report = forwardProgress((fraction) => run.progress(fraction));
    let task = first;
    let failures = 0;
    try {
      for (;;) {
        const progress = progressOfLogs(task.logs);
        if (progress !== undefined) report(progress);
        if (isTerminal(task.status)) break;
        await sleep(pollIntervalMs, signal);
        try {
          task = await get(kind, task.id, signal);
          failures = 0;
        } catch (thrown) {
          if (signal.aborted || !(thrown instanceof EngineError && thrown.retryable) || ++failures > POLL_FAILURES_TOLERATED) throw thrown;
        }
      }
    } catch (thrown) {
      if (!signal.aborted) throw thrown;
      if (cancelsRemoteWork(signal)) await cancel(kind, task.id);
      throw signal.reason;
    }
    return succeeded(kind, task);
  };

  const succeeded = (kind: TaskKind, task: ReplicateTask): ReplicateTask => {
    const what = `${LABEL} ${kind === 'predictions' ? 'prediction' : 'training'} ${task.id}`;
    if (task.status === 'succeeded') return task;
    if (task.status === 'failed') throw http.client.error(`${what} failed: ${errorText(task.error)}`, { retryable: false });
    if (task.status === 'aborted') throw http.client.error(`${what} passed its deadline before it could start.`, { retryable: true });
    throw http.client.error(`${what} was canceled at the engine (by its owner on Replicate, or past its deadline).`, { retryable: false });
  };

  return {
    http,
    async run(kind, creation, run) {
      const { signal } = run;
      signal.throwIfAborted();
      let task = run.resumeId === undefined ? undefined : await resume(kind, run.resumeId, signal);
      if (task === undefined) {
        task = await create(creation.target, creation.body, signal);
        try {
          await run.submitted(task.id);
        } catch (thrown) {
          // A task the job does not know about would run, and cost, for nobody.
          await cancel(kind, task.id);
          throw thrown;
        }
      }
      return follow(kind, task, run);
    },
    close: () => http.close(),
  };
}
