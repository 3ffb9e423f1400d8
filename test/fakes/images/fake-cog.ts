/**
 * A fake Cog container on 127.0.0.1 (shared/notes/engines-wire.md), answering as coglet
 * does: `PUT /predictions/{id}` and `POST /predictions` run synchronously and answer the
 * finished prediction with `data:` URL outputs; a PUT for an id still running starts nothing
 * and answers 202 with its current state; a different id while every slot is busy gets 409;
 * `/health-check`, cancel, and 503 while setup has not finished.
 */
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { type ModelRun, modelSwitches, newModelRun, runSdxl, sdxlInputProblems } from './fake-sdxl.js';
import { type LoopbackServer, type RecordedRequest, sendJson, startLoopbackServer } from './loopback-server.js';

export type CogHealth = 'STARTING' | 'READY' | 'SETUP_FAILED' | 'DEFUNCT' | 'UNHEALTHY';

export interface FakeCogOptions {
  /** Time per logged step (default 5 ms). */
  stepMs?: number;
  /** Progress steps per prediction (default 4). */
  steps?: number;
  /** Prediction slots, Cog's `concurrency.max` (default 1). */
  capacity?: number;
  /**
   * Whether a synchronous prediction is canceled when its client disconnects: coglet (current
   * Cog) does, the older Python server let it run to the end (default true).
   */
  cancelOnDisconnect?: boolean;
  /** Health at start (default READY). */
  health?: CogHealth;
}

export interface FakeCogPrediction extends ModelRun {
  id: string;
  input: Record<string, unknown>;
  output: unknown;
  created_at: string;
}

export interface FakeCog extends LoopbackServer {
  /** Every prediction run, in the order they started. */
  readonly predictions: FakeCogPrediction[];
  readonly running: number;
  readonly maxRunning: number;
  /** Holds every prediction halfway until `release()`. */
  hold(): void;
  release(): void;
  /** The next prediction to finish fails with `message`. */
  failNext(message: string): void;
  /** Changes what `/health-check` reports; anything but READY refuses predictions with 503. */
  setHealth(health: CogHealth, setupLogs?: string): void;
}

const NOT_READY = 'Setup has not finished yet. Wait until it has finished, or GET /health-check for status.';

export async function startFakeCog(options: FakeCogOptions = {}): Promise<FakeCog> {
  const predictions: FakeCogPrediction[] = [];
  const inFlight = new Map<string, FakeCogPrediction>();
  let health: CogHealth = options.health ?? 'READY';
  let setupLogs = '';
  let maxRunning = 0;
  const switches = modelSwitches(options);
  const { controls } = switches;

  const view = (prediction: FakeCogPrediction) => ({
    id: prediction.id,
    input: prediction.input,
    output: prediction.output,
    logs: prediction.logs,
    error: prediction.error,
    status: prediction.status,
    created_at: prediction.created_at,
    started_at: prediction.started_at,
    completed_at: prediction.completed_at,
    metrics: prediction.completed_at === null ? {} : { predict_time: (Date.parse(prediction.completed_at) - Date.parse(prediction.created_at)) / 1000 },
  });

  const predict = async (request: RecordedRequest, response: ServerResponse, id: string): Promise<void> => {
    if (health !== 'READY') {
      sendJson(response, 503, { error: NOT_READY, status: 'failed' });
      return;
    }
    if (inFlight.size >= (options.capacity ?? 1)) {
      sendJson(response, 409, { error: 'At capacity - all prediction slots busy', status: 'failed' });
      return;
    }
    const input = (request.json as { input?: unknown } | undefined)?.input;
    const problems = sdxlInputProblems(input);
    if (problems.length > 0) {
      sendJson(response, 422, { detail: problems.map(([field, message]) => ({ loc: ['body', 'input', field], msg: message, type: 'value_error' })) });
      return;
    }
    const prediction: FakeCogPrediction = { ...newModelRun(), id, input: input as Record<string, unknown>, output: null, created_at: new Date().toISOString() };
    predictions.push(prediction);
    inFlight.set(id, prediction);
    maxRunning = Math.max(maxRunning, inFlight.size);
    response.on('close', () => {
      if (!response.writableFinished && options.cancelOnDisconnect !== false && inFlight.get(id) === prediction) cancel(prediction);
    });
    try {
      const pictures = await runSdxl(prediction, prediction.input, controls);
      if (pictures !== undefined) prediction.output = pictures.map((png) => `data:image/png;base64,${png.toString('base64')}`);
    } finally {
      if (inFlight.get(id) === prediction) inFlight.delete(id);
    }
    if (!switches.closed && !response.destroyed) sendJson(response, 200, view(prediction));
  };

  const cancel = (prediction: FakeCogPrediction): void => {
    if (prediction.status === 'starting' || prediction.status === 'processing') {
      prediction.status = 'canceled';
      prediction.completed_at = new Date().toISOString();
    }
  };

  const server = await startLoopbackServer(async (request, response) => {
    const { method, path } = request;
    const byId = /^\/predictions\/([^/]+)$/.exec(path);
    const cancelById = /^\/predictions\/([^/]+)\/cancel$/.exec(path);
    if (method === 'GET' && path === '/health-check') {
      const status = health === 'READY' && inFlight.size >= (options.capacity ?? 1) ? 'BUSY' : health;
      const setupStatus = health === 'STARTING' ? 'starting' : health === 'SETUP_FAILED' ? 'failed' : 'succeeded';
      sendJson(response, 200, { status, setup: { started_at: '2025-01-01T00:00:00Z', status: setupStatus, logs: setupLogs }, version: { coglet: '0.17.0', cog: '0.14.0', python: '3.12.0' } });
    } else if (method === 'PUT' && byId) {
      const id = decodeURIComponent(byId[1]!);
      const bodyId = (request.json as { id?: unknown } | undefined)?.id;
      if (bodyId !== undefined && bodyId !== id) {
        sendJson(response, 422, { detail: [{ loc: ['body', 'id'], msg: 'prediction ID must match the ID supplied in the URL', type: 'value_error' }] });
        return;
      }
      const running = inFlight.get(id);
      if (running !== undefined) sendJson(response, 202, view(running));
      else await predict(request, response, id);
    } else if (method === 'POST' && path === '/predictions') {
      const bodyId = (request.json as { id?: unknown } | undefined)?.id;
      await predict(request, response, typeof bodyId === 'string' ? bodyId : randomBytes(13).toString('hex'));
    } else if (method === 'POST' && cancelById) {
      const running = inFlight.get(decodeURIComponent(cancelById[1]!));
      if (running === undefined) sendJson(response, 404, {});
      else {
        cancel(running);
        sendJson(response, 200, {});
      }
    } else sendJson(response, 404, { detail: 'Not Found' });
  });

  return {
    ...server,
    predictions,
    get running() {
      return inFlight.size;
    },
    get maxRunning() {
      return maxRunning;
    },
    hold: switches.hold,
    release: switches.release,
    failNext: switches.failNext,
    setHealth: (next, logs = '') => {
      health = next;
      setupLogs = logs;
    },
    close: async () => {
      switches.shutDown();
      await server.close();
    },
  };
}
