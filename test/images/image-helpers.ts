/** Helpers shared by the image engine tests: payloads, recording runs, PNG checks. */
import { zipSync } from 'fflate';
import { PNG } from 'pngjs';
import { expect } from 'vitest';
import { EngineError } from '../../src/core/errors.js';
import type { EngineFile, EngineRun, ImagePayload } from '../../src/core/ports.js';
import { fakePicture } from '../fakes/images/fake-pictures.js';
import { ustar } from '../fakes/images/ustar.js';
import { patient } from '../support/patience.js';

/** A small, fast payload in the core's names; sizes stay tiny so fakes answer at once. */
export function samplePayload(overrides: Partial<ImagePayload> = {}): ImagePayload {
  return {
    prompt: 'a portrait of <s0><s1> in a sunflower field, golden hour',
    negativePrompt: 'blurry, deformed',
    width: 96,
    height: 64,
    samples: 1,
    seed: 1234,
    guidanceScale: 7.5,
    steps: 8,
    promptStrength: 0.8,
    faceInpainting: false,
    maxFaceInpaintSize: 0.5,
    faceInpaintingPrompt: '',
    faceInpaintingNegativePrompt: 'blurry, deformed, disfigured',
    ...overrides,
  };
}

/**
 * `samplePayload()` as Replicate and Cog receive it: the spec's snake_case `input`, in the
 * order the model has always been sent. Written out by hand, not derived by our mapping, so
 * the tests check the wire itself. Overrides keep a key's place; new keys (`lora_scale`,
 * `lora_1`) go last, as they are sent.
 */
export function sampleInput(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    prompt: 'a portrait of <s0><s1> in a sunflower field, golden hour',
    negative_prompt: 'blurry, deformed',
    width: 96,
    height: 64,
    num_outputs: 1,
    seed: 1234,
    guidance_scale: 7.5,
    num_inference_steps: 8,
    prompt_strength: 0.8,
    enable_face_inpainting: false,
    max_face_inpaint_size: 0.5,
    face_inpainting_prompt: '',
    face_inpainting_negative_prompt: 'blurry, deformed, disfigured',
    ...overrides,
  };
}

/** An `EngineRun` that records what the adapter reported. */
export interface RecordingRun extends EngineRun {
  readonly controller: AbortController;
  readonly submittedIds: string[];
  readonly progressValues: number[];
  /** Resolves with the first submitted id. */
  readonly firstSubmission: Promise<string>;
}

export function recordingRun(options: { resumeId?: string } = {}): RecordingRun {
  const controller = new AbortController();
  const submittedIds: string[] = [];
  const progressValues: number[] = [];
  let announce: (id: string) => void = () => undefined;
  const firstSubmission = new Promise<string>((resolve) => (announce = resolve));
  return {
    controller,
    signal: controller.signal,
    resumeId: options.resumeId,
    submittedIds,
    progressValues,
    firstSubmission,
    submitted: async (externalId) => {
      submittedIds.push(externalId);
      announce(externalId);
    },
    progress: (fraction) => void progressValues.push(fraction),
  };
}

/** Width and height of a PNG file, decoded for real. */
export function pngSize(file: EngineFile): { width: number; height: number } {
  expect(file.mimeType).toBe('image/png');
  const png = PNG.sync.read(Buffer.from(file.data));
  return { width: png.width, height: png.height };
}

/** The `EngineError` a promise rejects with; fails the test on success or another error. */
export async function engineFailure(promise: Promise<unknown>): Promise<EngineError> {
  const outcome = await promise.then(
    (value) => ({ resolved: value }),
    (error: unknown) => ({ rejected: error }),
  );
  if (!('rejected' in outcome)) throw new Error('expected an EngineError, but the call succeeded');
  expect(outcome.rejected).toBeInstanceOf(EngineError);
  return outcome.rejected as EngineError;
}

/** What a promise rejects with; fails the test on success. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection, but the call succeeded');
    },
    (error: unknown) => error,
  );
}

/** Waits until `condition` holds, polling every few milliseconds. */
export async function waitFor(condition: () => boolean, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + patient(timeoutMs);
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A zip of `count` small face photos, as the service sends to the trainer. */
export function photoZip(count: number): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (let index = 0; index < count; index++) {
    entries[`photo-${index + 1}.png`] = fakePicture({ prompt: 'face', seed: index, width: 32, height: 32, index });
  }
  return zipSync(entries);
}

/** A face-model archive shaped like the trainer's `trained_model.tar`. */
export function faceArchive(label: string): Uint8Array {
  return ustar([
    { name: 'lora.safetensors', data: Buffer.from(`weights of ${label}`) },
    { name: 'special_params.json', data: Buffer.from('{"TOK":"<s0><s1>"}') },
  ]);
}

/** A reason object to abort with, so tests can check the very same object comes back. */
export class TestAbort extends Error {
  override readonly name = 'TestAbort';
}
