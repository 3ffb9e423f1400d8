import { type Actor, actsFor } from '../actor.js';
import type { Characters } from '../characters.js';
import { AppError, ValidationError } from '../errors.js';
import type { Clock, FileStore, IdGenerator, ImageCodec, ImagePayload } from '../ports.js';
import type { RepositoryStore } from '../repositories.js';
import type { FaceModelRecord, JobRecord, TransactionRecord } from '../records.js';
import { type UploadedFile, packFacePhotos } from './face-photos.js';
import { buildImagePayload, characterReferences, type ImageRequestInput, validateImageRequest } from './image-request.js';
import type { JobRunner } from './job-runner.js';
import type { JobListener, JobPage, Jobs } from './jobs.js';

export interface ImagesOptions {
  /** Credits per image sample. */
  imageCreditCost: number;
  /** Credits per face-model training. */
  trainingCreditCost: number;
}

export interface CreatedJob {
  job: JobRecord;
  transaction: TransactionRecord;
}

/** Image generation and face-model training as the front ends use them. */
export class Images {
  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly characters: Characters,
    private readonly jobs: Jobs,
    private readonly runner: JobRunner,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly options: ImagesOptions,
    private readonly imageCodec: ImageCodec,
  ) {}

  /** Validates, resolves the character referenced, charges `samples × cost` and queues the job. */
  async create(actor: Actor, input: ImageRequestInput): Promise<CreatedJob> {
    validateImageRequest(input);
    const accountId = payingAccount(actor, 'create images');
    if (!this.runner.handles('IMAGE_INFERENCE')) {
      throw new AppError('NOT_CONFIGURED', 'No image engine is configured. Set IMAGE_ENGINE to a1111, replicate or cog, with its URL or token.');
    }
    const [characterId] = characterReferences(input.prompt);
    const model = characterId ? await this.#usableFaceModel(actor, characterId) : undefined;
    const payload = buildImagePayload(input, model ? { triggerToken: model.triggerToken! } : null);
    const created = await this.jobs.create(
      {
        accountId,
        clientId: input.clientId ?? null,
        type: 'IMAGE_INFERENCE',
        payload,
        faceModel: model ? { id: model.id, characterId: model.characterId, archiveKey: model.archive!.key } : null,
        photos: null,
      },
      this.options.imageCreditCost * payload.samples,
      `Image generation (${payload.samples} × ${this.options.imageCreditCost})`,
    );
    this.runner.wake();
    return created;
  }

  /** The same request again with a new seed (Discord's re-roll). */
  async reroll(actor: Actor, job: JobRecord): Promise<CreatedJob> {
    if (job.type !== 'IMAGE_INFERENCE') throw new AppError('CONFLICT', 'Only image jobs can be made again.');
    const payload = job.payload as ImagePayload;
    let prompt = payload.prompt;
    if (job.faceModel) {
      // The stored prompt carries the trigger token; put the character reference back.
      const token = (await this.store.faceModels.get(job.faceModel.id))?.triggerToken;
      if (token) prompt = prompt.split(token).join(`<${job.faceModel.characterId}>`);
    }
    return this.create(actor, {
      prompt,
      negativePrompt: payload.negativePrompt,
      width: payload.width,
      height: payload.height,
      samples: payload.samples,
      guidanceScale: payload.guidanceScale,
      loraScale: payload.loraScale,
    });
  }

  /**
   * Starts training a face model for a character the actor owns, from 5 to 30 photos (or
   * zips of them). The model appears IN_PROGRESS at once; the owner's account is charged.
   */
  async trainFace(actor: Actor, characterId: string, uploads: readonly UploadedFile[]): Promise<CreatedJob & { model: FaceModelRecord }> {
    const character = await this.characters.getOwned(actor, characterId);
    if (!this.runner.handles('FACE_MODEL_TRAINING')) {
      throw new AppError('NOT_CONFIGURED', 'Face-model training is not configured. Set REPLICATE_API_TOKEN, REPLICATE_TRAINER_VERSION and REPLICATE_TRAINING_DESTINATION.');
    }
    const { zip, count } = await packFacePhotos(uploads, this.imageCodec);
    const photos = await this.files.put(zip, 'application/zip');
    const modelId = this.ids.uuid();
    let model: FaceModelRecord | undefined;
    const created = await this.jobs.create(
      {
        accountId: character.accountId,
        clientId: null,
        type: 'FACE_MODEL_TRAINING',
        payload: { characterId: character.id, faceModelId: modelId, photoCount: count },
        faceModel: { id: modelId, characterId: character.id, archiveKey: null },
        photos: { key: photos.key, mimeType: photos.mimeType },
      },
      this.options.trainingCreditCost,
      `Face-model training for ${character.name}`,
      // The model appears with its paid job, or not at all.
      async (repositories, job) => {
        model = await repositories.faceModels.create({
          id: modelId,
          characterId: character.id,
          jobId: job.id,
          createdMillis: this.clock.nowMillis(),
          status: 'IN_PROGRESS',
          archive: null,
          triggerToken: null,
          failure: null,
        });
      },
    );
    this.runner.wake();
    return { ...created, model: model! };
  }

  get(actor: Actor, jobId: string): Promise<JobRecord> {
    return this.jobs.get(actor, jobId);
  }

  /** An account's jobs, newest first: its own, or any account's for the admin. */
  async list(actor: Actor, accountId: string, limit: number, cursor?: string): Promise<JobPage> {
    if (!actsFor(actor, accountId)) throw new AppError('FORBIDDEN', 'You can list only your own jobs.');
    return this.jobs.list(accountId, limit, cursor);
  }

  async cancel(actor: Actor, jobId: string): Promise<JobRecord> {
    return this.runner.cancel(await this.jobs.get(actor, jobId));
  }

  feedback(actor: Actor, jobId: string, name: string, feedback: { like?: boolean | null; feedback?: string | null }): Promise<JobRecord> {
    return this.jobs.feedback(actor, jobId, name, feedback);
  }

  /** Queue position of a waiting job (0: next) in the queue every process shares, for progress messages. */
  position(job: JobRecord): Promise<number | undefined> {
    return this.jobs.position(job);
  }

  /** A job by id for the service's own follow-up (a Discord delivery), whoever owns it. */
  find(jobId: string): Promise<JobRecord | undefined> {
    return this.jobs.find(jobId);
  }

  /** Live progress of a running job in this process, or null. */
  progressOf(jobId: string): number | null {
    return this.jobs.progressOf(jobId);
  }

  /** Hears every change of every job, made in this process or another; returns the way to stop. */
  subscribe(listener: JobListener): () => void {
    return this.jobs.subscribe(listener);
  }

  /** The actor's job once final and settled, or undefined when `timeoutMs` passes first. */
  async waitForFinal(actor: Actor, jobId: string, timeoutMs: number): Promise<JobRecord | undefined> {
    await this.jobs.get(actor, jobId);
    return this.jobs.waitForFinal(jobId, timeoutMs);
  }

  /** Starts running jobs from the shared queue and hearing other processes' job changes. */
  async start(): Promise<void> {
    this.listen();
    await this.runner.start();
  }

  /** Hears other processes' job changes without running jobs: a bot delivering what workers made. */
  listen(): void {
    this.jobs.listen();
  }

  /** Stops taking jobs; running ones stay at their engines for whoever claims them next. */
  async stop(): Promise<void> {
    await this.runner.stop();
    this.jobs.stopListening();
  }

  /** Resolves when no job is running here (tests and benchmarks). */
  idle(): Promise<void> {
    return this.runner.idle();
  }

  /** The newest usable face model of a character the actor may see, or a 409 saying why not. */
  async #usableFaceModel(actor: Actor, characterId: string): Promise<FaceModelRecord> {
    let models: FaceModelRecord[];
    let name: string;
    try {
      name = (await this.characters.get(actor, characterId)).name;
      models = await this.characters.faceModels(actor, characterId);
    } catch (error) {
      if (error instanceof AppError && error.code === 'NOT_FOUND') {
        throw ValidationError.field('prompt', `refers to character ${characterId}, which does not exist or is not visible to you`);
      }
      throw error;
    }
    const usable = models.findLast((model) => model.status === 'SUCCESS' && model.archive && model.triggerToken);
    if (usable) return usable;
    const latest = models.at(-1);
    const state = latest
      ? latest.status === 'IN_PROGRESS'
        ? 'its face model is still training (IN_PROGRESS); try again when it is ready'
        : `its latest face model ${latest.status === 'FAILED' ? `failed (${latest.failure ?? 'no reason given'})` : latest.status}; train a new one`
      : 'it has no face model yet; train one first (POST /api/v0/characters/:id/images/models or /character train-face)';
    throw new AppError('FACE_MODEL_NOT_READY', `Character "${name}" (${characterId}) cannot be drawn: ${state}.`, {
      details: { characterId, modelStatus: latest?.status ?? null },
    });
  }
}

function payingAccount(actor: Actor, what: string): string {
  if (actor.type === 'admin') throw new AppError('FORBIDDEN', `The admin key cannot ${what}: jobs belong to an account. Use that account's key.`);
  return actor.accountId;
}
