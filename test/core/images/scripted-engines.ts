/**
 * Engines for the job runner's own tests, where no wire exists: each run waits for the test
 * to finish it, so every state in between (queued, running, resumed) can be looked at.
 * The adapters themselves are tested against loopback fakes in test/images.
 */
import { PNG } from 'pngjs';
import type { EngineFile, EngineRun, FaceTrainer, FaceTrainingRequest, ImageEngine, ImageRequest, TrainedFace } from '../../../src/core/ports.js';
import { EngineError } from '../../../src/core/errors.js';

export interface ScriptedRun<Request> {
  request: Request;
  run: EngineRun;
  finish(): void;
  fail(error: Error): void;
}

export function png(seed: number): Uint8Array {
  const image = new PNG({ width: 8, height: 8 });
  image.data.fill(seed % 256);
  return PNG.sync.write(image);
}

class Scripted<Request, Result> {
  readonly started: Array<ScriptedRun<Request>> = [];
  running = 0;
  maxRunning = 0;
  /** When set, runs finish on their own with this result. */
  autoFinish = false;

  constructor(private readonly make: (request: Request) => Result) {}

  start(request: Request, run: EngineRun): Promise<Result> {
    this.running += 1;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise<Result>((resolve, reject) => {
      const done = () => {
        this.running -= 1;
        run.signal.removeEventListener('abort', onAbort);
      };
      const onAbort = () => {
        done();
        reject(run.signal.reason);
      };
      if (run.signal.aborted) {
        onAbort();
        return;
      }
      run.signal.addEventListener('abort', onAbort, { once: true });
      const entry: ScriptedRun<Request> = {
        request,
        run,
        finish: () => {
          done();
          resolve(this.make(request));
        },
        fail: (error) => {
          done();
          reject(error);
        },
      };
      this.started.push(entry);
      if (this.autoFinish) queueMicrotask(entry.finish);
    });
  }

  /** The nth run started (0-based), once it has. */
  async nth(index: number): Promise<ScriptedRun<Request>> {
    for (let waited = 0; waited < 5000; waited += 5) {
      const entry = this.started[index];
      if (entry) return entry;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    throw new Error(`run ${index} never started (${this.started.length} started)`);
  }
}

export class ScriptedImageEngine implements ImageEngine {
  readonly provider = 'scripted';
  readonly runs = new Scripted<ImageRequest, EngineFile[]>((request) =>
    Array.from({ length: request.payload.samples }, (_, index) => ({ data: png(request.payload.seed + index), mimeType: 'image/png' })),
  );

  constructor(readonly concurrency = 2) {}

  async generate(request: ImageRequest, run: EngineRun): Promise<EngineFile[]> {
    await run.submitted(run.resumeId ?? `prediction-${request.jobId}`);
    return this.runs.start(request, run);
  }

  async close(): Promise<void> {}
}

export class ScriptedTrainer implements FaceTrainer {
  readonly provider = 'scripted-trainer';
  readonly concurrency = 1;
  readonly runs = new Scripted<FaceTrainingRequest, TrainedFace>((request) => ({
    archive: { data: new TextEncoder().encode(`weights for ${request.jobId}`), mimeType: 'application/x-tar' },
    triggerToken: '<s0><s1>',
  }));

  async train(request: FaceTrainingRequest, run: EngineRun): Promise<TrainedFace> {
    await run.submitted(run.resumeId ?? `training-${request.jobId}`);
    return this.runs.start(request, run);
  }

  async close(): Promise<void> {}
}

export const engineDown = () => new EngineError('Image engine at http://127.0.0.1:1 is unreachable (ECONNREFUSED).', { provider: 'scripted', code: 'ENGINE_UNAVAILABLE', retryable: true });
export const engineRefused = () => new EngineError('Image engine answered 422: prompt is flagged', { provider: 'scripted', status: 422 });
