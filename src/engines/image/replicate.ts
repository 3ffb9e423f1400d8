/**
 * An `ImageEngine` over Replicate predictions. The model's input is the payload under the
 * spec's names (the SDXL model's, see `modelInput`), plus `lora_1`, the face model's archive
 * URL, which the model downloads itself. Predictions are polled rather than held open with `Prefer: wait`,
 * which caps at 60 s and would hide progress. Output URLs expire, so they are downloaded here.
 */
import { AppError } from '../../core/errors.js';
import type { EngineFile, EngineRun, ImageEngine, ImageRequest } from '../../core/ports.js';
import { outputImages } from './engine-files.js';
import { REPLICATE_PROVIDER, type ReplicateConnectionOptions, createReplicateTasks } from './replicate-tasks.js';
import { modelInput, parseModelReference } from './replicate-wire.js';
import type { SpecImagePayload } from './spec-payload.js';

export { REPLICATE_PROVIDER };

export interface ReplicateImageOptions extends ReplicateConnectionOptions {
  /** `owner/name` (the model's latest version) or `owner/name:version`. */
  model: string;
  /** Predictions run at once (default 4). */
  concurrency?: number;
  /** How often a running prediction is polled (default 1000 ms). */
  pollIntervalMs?: number;
}

/** The Replicate engine; throws `NOT_CONFIGURED` for a malformed model reference. */
export function createReplicateImageEngine(options: ReplicateImageOptions): ImageEngine {
  const model = parseModelReference(options.model);
  if (model === undefined) throw new AppError('NOT_CONFIGURED', `Replicate model must be owner/name or owner/name:version, not "${options.model}".`);
  const tasks = createReplicateTasks(options, options.pollIntervalMs ?? 1000);
  const { http } = tasks;

  /** The create request; a pinned version goes to `/predictions`, a bare model to its own route. */
  const creation = (input: SpecImagePayload): { target: string; body: unknown } =>
    model.version === undefined
      ? { target: `/models/${encodeURIComponent(model.owner)}/${encodeURIComponent(model.name)}/predictions`, body: { input } }
      : { target: '/predictions', body: { version: model.version, input } };

  const generate = async (request: ImageRequest, run: EngineRun): Promise<EngineFile[]> => {
    const input = modelInput(request);
    const prediction = await tasks.run('predictions', creation(input), run);
    const files = await outputImages(http, prediction.output, run.signal, `Replicate prediction ${prediction.id}`);
    if (files.length === 0) {
      throw http.client.error(`Replicate prediction ${prediction.id} succeeded without output files (Replicate deletes API outputs after about an hour).`, {
        retryable: false,
      });
    }
    return files;
  };

  return {
    provider: REPLICATE_PROVIDER,
    concurrency: options.concurrency ?? 4,
    generate,
    close: () => tasks.close(),
  };
}
