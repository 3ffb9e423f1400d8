import { randomInt } from 'node:crypto';
import { type FieldIssue, ValidationError } from '../errors.js';
import type { ImagePayload } from '../ports.js';

/** What a person asks for, in the spec's request names (`POST /api/v0/images`, `/imagine`). */
export interface ImageRequestInput {
  prompt: string;
  negativePrompt?: string | undefined;
  width?: number | undefined;
  height?: number | undefined;
  samples?: number | undefined;
  seed?: number | undefined;
  guidanceScale?: number | undefined;
  loraScale?: number | undefined;
  /** Client-chosen id recorded on the job (the spec's `clientId`). */
  clientId?: string | undefined;
}

/** The spec's limits (part 8) and the few we add; every violation is named in one 400. */
export const imageLimits = {
  promptCharacters: 2000,
  maxSide: 1024,
  minSide: 64,
  /** Diffusion models work in 8-pixel latent cells. */
  sideMultiple: 8,
  maxSamples: 4,
  guidanceScale: { min: 1, max: 20 },
  loraScale: { min: 0, max: 1 },
  maxSeed: 4_294_967_295,
} as const;

export const imageDefaults = {
  width: 1024,
  height: 1024,
  samples: 1,
  guidanceScale: 7.5,
  loraScale: 0.6,
  steps: 30,
  promptStrength: 0.8,
  maxFaceInpaintSize: 0.5,
  faceInpaintingNegativePrompt: 'blurry, deformed, disfigured',
} as const;

/** `<character-id>` references inside a prompt. */
const referencePattern = /<([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})>/gi;

/** The distinct character ids a prompt references, lower-cased, in order of appearance. */
export function characterReferences(prompt: string): string[] {
  return [...new Set([...prompt.matchAll(referencePattern)].map((match) => match[1]!.toLowerCase()))];
}

/** The prompt with every `<character-id>` replaced by the face model's trigger token. */
export function withTriggerToken(prompt: string, triggerToken: string): string {
  return prompt.replace(referencePattern, triggerToken);
}

/** Checks every field against the limits; throws one `ValidationError` naming them all. */
export function validateImageRequest(input: ImageRequestInput): void {
  const issues: FieldIssue[] = [];
  const prompt = typeof input.prompt === 'string' ? input.prompt.trim() : '';
  if (prompt.length === 0) issues.push({ field: 'prompt', message: 'is required: describe the image you want' });
  else if (prompt.length > imageLimits.promptCharacters) {
    issues.push({ field: 'prompt', message: `must be at most ${imageLimits.promptCharacters} characters` });
  }
  if (input.negativePrompt !== undefined && input.negativePrompt.length > imageLimits.promptCharacters) {
    issues.push({ field: 'negativePrompt', message: `must be at most ${imageLimits.promptCharacters} characters` });
  }
  for (const field of ['width', 'height'] as const) {
    const value = input[field];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < imageLimits.minSide || value > imageLimits.maxSide || value % imageLimits.sideMultiple !== 0) {
      issues.push({
        field,
        message: `must be a whole number of pixels from ${imageLimits.minSide} to ${imageLimits.maxSide}, a multiple of ${imageLimits.sideMultiple}; got ${value}`,
      });
    }
  }
  if (input.samples !== undefined && (!Number.isInteger(input.samples) || input.samples < 1 || input.samples > imageLimits.maxSamples)) {
    issues.push({ field: 'samples', message: `must be a whole number from 1 to ${imageLimits.maxSamples}; got ${input.samples}` });
  }
  if (input.seed !== undefined && (!Number.isInteger(input.seed) || input.seed < 0 || input.seed > imageLimits.maxSeed)) {
    issues.push({ field: 'seed', message: `must be a whole number from 0 to ${imageLimits.maxSeed}; got ${input.seed}` });
  }
  const { guidanceScale: guidance, loraScale: lora } = imageLimits;
  if (input.guidanceScale !== undefined && !(input.guidanceScale >= guidance.min && input.guidanceScale <= guidance.max)) {
    issues.push({ field: 'guidanceScale', message: `must be from ${guidance.min} to ${guidance.max}; got ${input.guidanceScale}` });
  }
  if (input.loraScale !== undefined && !(input.loraScale >= lora.min && input.loraScale <= lora.max)) {
    issues.push({ field: 'loraScale', message: `must be from ${lora.min} to ${lora.max}; got ${input.loraScale}` });
  }
  if (characterReferences(prompt).length > 1) {
    issues.push({ field: 'prompt', message: 'references more than one character; an image can carry one character\'s face' });
  }
  if (issues.length > 0) throw new ValidationError(issues);
}

/**
 * The engine parameters of a valid request: defaults filled in and a seed drawn when none
 * was given, so the stored payload alone reproduces the images.
 */
export function buildImagePayload(input: ImageRequestInput, face: { triggerToken: string } | null): ImagePayload {
  const prompt = input.prompt.trim();
  const payload: ImagePayload = {
    prompt: face ? withTriggerToken(prompt, face.triggerToken) : prompt,
    negativePrompt: input.negativePrompt?.trim() ?? '',
    width: input.width ?? imageDefaults.width,
    height: input.height ?? imageDefaults.height,
    samples: input.samples ?? imageDefaults.samples,
    seed: input.seed ?? randomInt(0, imageLimits.maxSeed),
    guidanceScale: input.guidanceScale ?? imageDefaults.guidanceScale,
    steps: imageDefaults.steps,
    promptStrength: imageDefaults.promptStrength,
    faceInpainting: face !== null,
    maxFaceInpaintSize: imageDefaults.maxFaceInpaintSize,
    faceInpaintingPrompt: face ? `a photo of ${face.triggerToken}` : '',
    faceInpaintingNegativePrompt: face ? imageDefaults.faceInpaintingNegativePrompt : '',
  };
  if (face) payload.loraScale = input.loraScale ?? imageDefaults.loraScale;
  return payload;
}
