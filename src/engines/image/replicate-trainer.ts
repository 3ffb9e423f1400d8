/**
 * A `FaceTrainer` over Replicate trainings of the SDXL LoRA trainer. The trainer downloads
 * the photo zip itself (a signed URL), binds `token_string` to the new tokens `<s0><s1>`,
 * and writes `trained_model.tar` (LoRA weights and token embeddings) as `output.weights`,
 * which is downloaded here because Replicate's file URLs expire.
 */
import { AppError } from '../../core/errors.js';
import type { EngineRun, FaceTrainer, FaceTrainingRequest, TrainedFace } from '../../core/ports.js';
import { fetchOutput } from './engine-files.js';
import { REPLICATE_PROVIDER, type ReplicateConnectionOptions, createReplicateTasks } from './replicate-tasks.js';
import { parseModelReference, weightsUrl } from './replicate-wire.js';

export interface ReplicateFaceTrainerOptions extends ReplicateConnectionOptions {
  /** The trainer, `owner/name:version`. */
  trainerVersion: string;
  /** `owner/model` the trained weights are written to; Replicate requires it to exist. */
  destination: string;
  /** Trainings run at once (default 2). */
  concurrency?: number;
  /** How often a running training is polled (default 5000 ms). */
  pollIntervalMs?: number;
  /** The word in captions that the trainer replaces with `<s0><s1>` (default `TOK`). */
  tokenString?: string;
  /** `max_train_steps` (default 1000). */
  steps?: number;
}

/** What the SDXL trainer binds `token_string` to; prompts use it to bring in the face. */
export const SDXL_TRIGGER_TOKEN = '<s0><s1>';
/** An SDXL LoRA of rank 32 with its embeddings is a few hundred MB; anything past this is wrong. */
const MAX_ARCHIVE_BYTES = 2 * 1024 * 1024 * 1024;

/** The Replicate trainer; throws `NOT_CONFIGURED` for a malformed trainer or destination. */
export function createReplicateFaceTrainer(options: ReplicateFaceTrainerOptions): FaceTrainer {
  const trainer = parseModelReference(options.trainerVersion);
  if (trainer?.version === undefined) throw new AppError('NOT_CONFIGURED', `Replicate trainer must be owner/name:version, not "${options.trainerVersion}".`);
  const destination = parseModelReference(options.destination);
  if (destination === undefined || destination.version !== undefined) {
    throw new AppError('NOT_CONFIGURED', `Replicate training destination must be owner/model, not "${options.destination}".`);
  }
  const tasks = createReplicateTasks(options, options.pollIntervalMs ?? 5000, 'training');
  const { http } = tasks;
  const tokenString = options.tokenString ?? 'TOK';
  const target = `/models/${encodeURIComponent(trainer.owner)}/${encodeURIComponent(trainer.name)}/versions/${encodeURIComponent(trainer.version)}/trainings`;

  const train = async (request: FaceTrainingRequest, run: EngineRun): Promise<TrainedFace> => {
    const body = {
      destination: `${destination.owner}/${destination.name}`,
      input: {
        input_images: request.imagesUrl,
        token_string: tokenString,
        caption_prefix: `a photo of ${tokenString}, `,
        max_train_steps: options.steps ?? 1000,
        use_face_detection_instead: true,
        is_lora: true,
        lora_rank: 32,
        resolution: 1024,
      },
    };
    const training = await tasks.run('trainings', { target, body }, run);
    const weights = weightsUrl(training.output);
    if (weights === undefined) throw http.client.error(`Replicate training ${training.id} succeeded without output.weights.`, { retryable: false });
    const archive = await fetchOutput(http, weights, run.signal, MAX_ARCHIVE_BYTES);
    if (archive.data.byteLength === 0) throw http.client.error(`Replicate training ${training.id} produced an empty archive.`, { retryable: false });
    return { archive: { data: archive.data, mimeType: 'application/x-tar' }, triggerToken: SDXL_TRIGGER_TOKEN };
  };

  return {
    provider: REPLICATE_PROVIDER,
    concurrency: options.concurrency ?? 2,
    train,
    close: () => tasks.close(),
  };
}
