/**
 * A fake Replicate API on 127.0.0.1 speaking its wire format (shared/notes/engines-wire.md):
 * bearer auth, predictions by version (`POST /v1/predictions`) or by model
 * (`POST /v1/models/{owner}/{name}/predictions`), trainings
 * (`POST /v1/models/{owner}/{name}/versions/{version}/trainings`), polling, cancel, and the
 * `{title, detail, status}` error bodies. Output files are served by a second loopback
 * server, like Replicate's delivery host, and can be made to expire.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { runSdxlTraining } from './fake-sdxl-trainer.js';
import { type ModelRun, modelSwitches, newModelRun, runSdxl, sdxlInputProblems } from './fake-sdxl.js';
import { type LoopbackServer, type RecordedRequest, pause, sendBytes, sendJson, startLoopbackServer } from './loopback-server.js';

export interface FakeReplicateOptions {
  /** The token `Authorization: Bearer` must carry (default `test-token`). */
  apiToken?: string;
  /** Time a task spends `starting` (default 10 ms). */
  startingMs?: number;
  /** Time per logged step (default 5 ms). */
  stepMs?: number;
  /** Progress steps per task (default 4). */
  steps?: number;
}

/** A prediction or training as the fake holds it. */
export interface FakeReplicateTask extends ModelRun {
  id: string;
  kind: 'predictions' | 'trainings';
  /** How it was created: by `version`, by `model`, or as a training. */
  route: 'version' | 'model' | 'training';
  model: string;
  version: string;
  input: Record<string, unknown>;
  destination?: string;
  output: unknown;
  created_at: string;
  /** Photos the trainer found in `input_images`. */
  photoCount?: number;
}

export interface FakeReplicate extends LoopbackServer {
  /** The API base URL, `<url>/v1`. */
  readonly apiURL: string;
  /** The file host that serves outputs and archives. */
  readonly delivery: LoopbackServer;
  readonly predictions: FakeReplicateTask[];
  readonly trainings: FakeReplicateTask[];
  /** Tasks starting or processing now, and the most ever at once. */
  readonly running: number;
  readonly maxRunning: number;
  /** Holds every task halfway until `release()`. */
  hold(): void;
  release(): void;
  /** The next task to finish fails with `message` as its `error`. */
  failNext(message: string): void;
  /** The next `times` creations answer 429 with `retry-after: <seconds>`. */
  rateLimitNext(retryAfterSeconds: number, times?: number): void;
  /** Every file served so far answers 404 from now on, as outputs do an hour after their prediction. */
  expireFiles(): void;
}

const TERMINAL = new Set(['succeeded', 'failed', 'canceled']);

export async function startFakeReplicate(options: FakeReplicateOptions = {}): Promise<FakeReplicate> {
  const apiToken = options.apiToken ?? 'test-token';
  const tasks = new Map<string, FakeReplicateTask>();
  const files = new Map<string, { bytes: Buffer; contentType: string }>();
  let maxRunning = 0;
  const runningCount = (): number => [...tasks.values()].filter((task) => !TERMINAL.has(task.status)).length;
  const switches = modelSwitches(options);
  const { controls } = switches;

  const delivery = await startLoopbackServer((request, response) => {
    const file = files.get(request.path);
    if (file === undefined) sendJson(response, 404, { detail: 'Not found' });
    else sendBytes(response, file.bytes, file.contentType);
  });
  const publish = (path: string, bytes: Buffer, contentType: string): string => {
    files.set(path, { bytes, contentType });
    return `${delivery.url}${path}`;
  };

  const view = (task: FakeReplicateTask) => ({
    id: task.id,
    model: task.model,
    version: task.version,
    input: task.input,
    logs: task.logs,
    output: task.output,
    data_removed: false,
    error: task.error,
    status: task.status,
    created_at: task.created_at,
    started_at: task.started_at,
    completed_at: task.completed_at,
    urls: {
      get: `${api.url}/v1/${task.kind}/${task.id}`,
      cancel: `${api.url}/v1/${task.kind}/${task.id}/cancel`,
    },
  });

  const start = (task: FakeReplicateTask): void => {
    tasks.set(task.id, task);
    maxRunning = Math.max(maxRunning, runningCount());
    void (async () => {
      await pause(options.startingMs ?? 10);
      if (task.status === 'canceled' || switches.closed) return;
      if (task.kind === 'predictions') {
        const pictures = await runSdxl(task, task.input, controls);
        if (pictures !== undefined) task.output = pictures.map((png, index) => publish(`/${task.id}/out-${index}.png`, png, 'image/png'));
      } else {
        const trained = await runSdxlTraining(task, task.input, controls);
        if (trained !== undefined) {
          task.photoCount = trained.photoCount;
          const hash = createHash('sha256').update(trained.archive).digest('hex');
          task.output = { version: `${task.destination}:${hash}`, weights: publish(`/${task.id}/trained_model.tar`, trained.archive, 'application/x-tar') };
        }
      }
    })();
  };

  const create = (request: RecordedRequest, response: ServerResponse, route: FakeReplicateTask['route'], model: string, version: string | undefined): void => {
    const body = (request.json ?? {}) as Record<string, unknown>;
    if (version === undefined) {
      sendJson(response, 422, { title: 'Invalid version or not permitted', detail: 'The specified version does not exist (or perhaps you don\'t have permission to use it?)', status: 422 });
      return;
    }
    const problems = route === 'training' ? trainingProblems(body) : sdxlInputProblems(body['input']).map(([field, message]): [string, string] => [`input.${field}`, message]);
    if (problems.length > 0) {
      sendJson(response, 422, {
        title: 'Input validation failed',
        detail: problems.map(([field, message]) => `- ${field}: ${message}\n`).join(''),
        status: 422,
        invalid_fields: problems.map(([field, message]) => ({ type: 'invalid', field, description: message })),
      });
      return;
    }
    const task: FakeReplicateTask = {
      ...newModelRun(),
      id: randomBytes(13).toString('hex'),
      kind: route === 'training' ? 'trainings' : 'predictions',
      route,
      model,
      version,
      input: body['input'] as Record<string, unknown>,
      output: null,
      created_at: new Date().toISOString(),
    };
    if (route === 'training') task.destination = String(body['destination']);
    start(task);
    sendJson(response, 201, view(task));
  };

  const api = await startLoopbackServer((request, response) => {
    if (request.headers.authorization !== `Bearer ${apiToken}`) {
      sendJson(response, 401, { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 });
      return;
    }
    const { method, path } = request;
    const byModel = /^\/v1\/models\/([^/]+)\/([^/]+)\/predictions$/.exec(path);
    const training = /^\/v1\/models\/([^/]+)\/([^/]+)\/versions\/([^/]+)\/trainings$/.exec(path);
    const existing = /^\/v1\/(predictions|trainings)\/([^/]+)(\/cancel)?$/.exec(path);
    const version = (request.json as { version?: unknown } | undefined)?.version;
    if (method === 'POST' && path === '/v1/predictions') create(request, response, 'version', 'replicate/sdxl', typeof version === 'string' ? version : undefined);
    else if (method === 'POST' && byModel) create(request, response, 'model', `${byModel[1]}/${byModel[2]}`, createHash('sha256').update(path).digest('hex'));
    else if (method === 'POST' && training) create(request, response, 'training', `${training[1]}/${training[2]}`, training[3]);
    else if (existing && (existing[3] === undefined ? method === 'GET' : method === 'POST')) {
      const task = tasks.get(existing[2]!);
      if (task === undefined || task.kind !== existing[1]) {
        sendJson(response, 404, { detail: 'Not found.', status: 404 });
        return;
      }
      if (existing[3] !== undefined && !TERMINAL.has(task.status)) {
        task.status = 'canceled';
        task.completed_at = new Date().toISOString();
      }
      sendJson(response, 200, view(task));
    } else sendJson(response, 404, { detail: 'Not found.', status: 404 });
  });

  const all = () => [...tasks.values()];
  return {
    ...api,
    apiURL: `${api.url}/v1`,
    delivery,
    get predictions() {
      return all().filter((task) => task.kind === 'predictions');
    },
    get trainings() {
      return all().filter((task) => task.kind === 'trainings');
    },
    get running() {
      return runningCount();
    },
    get maxRunning() {
      return maxRunning;
    },
    hold: switches.hold,
    release: switches.release,
    failNext: switches.failNext,
    rateLimitNext: (retryAfterSeconds: number, times = 1) =>
      api.answerNext(
        { method: 'POST', path: /\/(predictions|trainings)$/ },
        { status: 429, body: { title: 'Request was throttled.', detail: `Request was throttled. Expected available in ${retryAfterSeconds} second.`, status: 429 }, headers: { 'retry-after': String(retryAfterSeconds) } },
        times,
      ),
    expireFiles: () => files.clear(),
    close: async () => {
      switches.shutDown();
      await Promise.all([api.close(), delivery.close()]);
    },
  };
}

function trainingProblems(body: Record<string, unknown>): Array<[string, string]> {
  const input = body['input'] as Record<string, unknown> | undefined;
  const problems: Array<[string, string]> = [];
  if (typeof body['destination'] !== 'string' || !/^[\w.-]+\/[\w.-]+$/.test(body['destination'])) problems.push(['destination', 'must be owner/model']);
  if (typeof input?.['input_images'] !== 'string') problems.push(['input.input_images', 'Field required']);
  return problems;
}
