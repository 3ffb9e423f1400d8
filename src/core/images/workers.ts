import { AppError } from '../errors.js';
import type { FaceTrainer, FileLinks, ImageEngine, ImagePayload } from '../ports.js';
import type { FaceModelRecord, JobRecord } from '../records.js';
import type { RepositoryStore } from '../repositories.js';
import type { JobWorker } from './job-runner.js';

/** Image jobs on a diffusion engine, with the job's face model applied by a fresh signed URL. */
export function imageWorker(engine: ImageEngine, store: RepositoryStore, links: FileLinks, timeLimitMs: number): JobWorker {
  return {
    provider: engine.provider,
    concurrency: engine.concurrency,
    timeLimitMs,
    run: async (job, run) => {
      let faceModel = null;
      if (job.faceModel) {
        const model = await store.faceModels.get(job.faceModel.id);
        if (!model || model.status !== 'SUCCESS' || !model.archive || !model.triggerToken) {
          throw new AppError('FACE_MODEL_NOT_READY', `Face model ${job.faceModel.id} is no longer usable.`);
        }
        faceModel = { id: model.id, archiveUrl: links.sign(model.archive.key), triggerToken: model.triggerToken };
      }
      return engine.generate({ jobId: job.id, payload: job.payload as ImagePayload, faceModel }, run);
    },
  };
}

/**
 * Face-model trainings: the trainer fetches the photo zip by signed URL; its archive becomes
 * the job's output (kept in our storage by the runner), and settling the job makes the
 * character's model usable with that archive, or marks it failed.
 */
export function trainingWorker(trainer: FaceTrainer, store: RepositoryStore, links: FileLinks, timeLimitMs: number): JobWorker {
  return {
    provider: trainer.provider,
    concurrency: trainer.concurrency,
    timeLimitMs,
    run: async (job, run) => {
      const { modelId, photos } = trainingParts(job);
      const trained = await trainer.train({ jobId: job.id, imagesUrl: links.sign(photos.key) }, run);
      // Kept before the job can succeed, so settling after a crash still knows the token.
      await updateFaceModel(store, modelId, (model) => ({ ...model, triggerToken: trained.triggerToken }));
      return [trained.archive];
    },
    settle: async (job) => {
      const { modelId } = trainingParts(job);
      const archive = job.outputFiles[0];
      const change: Partial<FaceModelRecord> =
        job.status === 'SUCCESS' && archive
          ? { status: 'SUCCESS', archive: { key: archive.key, mimeType: archive.mimeType } }
          : { status: 'FAILED', failure: job.status === 'CANCELED' ? 'Training was canceled.' : (job.failure?.message ?? 'Training failed.') };
      await updateFaceModel(store, modelId, (model) => (model.status === 'IN_PROGRESS' ? { ...model, ...change } : model));
    },
  };
}

function trainingParts(job: JobRecord) {
  if (!job.faceModel || !job.photos) throw new AppError('INTERNAL', `Training job ${job.id} lacks its face model or photos.`);
  return { modelId: job.faceModel.id, photos: job.photos };
}

export async function updateFaceModel(
  store: RepositoryStore,
  modelId: string,
  change: (model: FaceModelRecord) => FaceModelRecord,
): Promise<FaceModelRecord | undefined> {
  // Read and written in one transaction, so two processes settling at once agree.
  return store.transaction(async ({ faceModels }) => {
    const model = await faceModels.get(modelId);
    if (!model) return undefined;
    const updated = change(model);
    if (updated !== model) await faceModels.update(updated);
    return updated;
  });
}
