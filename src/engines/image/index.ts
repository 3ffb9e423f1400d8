/** The image engines and the face trainer, for the wiring in `src/main.ts`. */
export { A1111_PROVIDER, type A1111ImageOptions, createA1111ImageEngine } from './a1111.js';
export { COG_PROVIDER, type CogImageOptions, createCogImageEngine } from './cog.js';
export { REPLICATE_PROVIDER, type ReplicateImageOptions, createReplicateImageEngine } from './replicate.js';
export { type ReplicateFaceTrainerOptions, SDXL_TRIGGER_TOKEN, createReplicateFaceTrainer } from './replicate-trainer.js';
