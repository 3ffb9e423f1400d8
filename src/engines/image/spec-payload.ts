/**
 * The spec's image payload: the snake_case names of the SDXL model (Replicate and Cog take it
 * as their `input`) that the spec's Job JSON shows as `payload`. Pure wire mapping from the
 * core's `ImagePayload`, so the HTTP serializer and the Replicate/Cog adapters share it.
 */
import type { ImagePayload } from '../../core/ports.js';

export interface SpecImagePayload {
  prompt: string;
  negative_prompt: string;
  width: number;
  height: number;
  num_outputs: number;
  seed: number;
  guidance_scale: number;
  num_inference_steps: number;
  prompt_strength: number;
  enable_face_inpainting: boolean;
  max_face_inpaint_size: number;
  face_inpainting_prompt: string;
  face_inpainting_negative_prompt: string;
  /** Only with a face model. */
  lora_scale?: number;
  /** URL of the face model's archive (`trained_model.tar`); only with a face model. */
  lora_1?: string;
}

/**
 * The payload under the spec's names, in the order they have always been sent, with `lora_1`
 * (the archive URL, signed when it is sent because signed URLs expire) last when given.
 */
export function toSpecImagePayload(payload: ImagePayload, loraUrl?: string): SpecImagePayload {
  const spec: SpecImagePayload = {
    prompt: payload.prompt,
    negative_prompt: payload.negativePrompt,
    width: payload.width,
    height: payload.height,
    num_outputs: payload.samples,
    seed: payload.seed,
    guidance_scale: payload.guidanceScale,
    num_inference_steps: payload.steps,
    prompt_strength: payload.promptStrength,
    enable_face_inpainting: payload.faceInpainting,
    max_face_inpaint_size: payload.maxFaceInpaintSize,
    face_inpainting_prompt: payload.faceInpaintingPrompt,
    face_inpainting_negative_prompt: payload.faceInpaintingNegativePrompt,
  };
  if (payload.loraScale !== undefined) spec.lora_scale = payload.loraScale;
  if (loraUrl !== undefined) spec.lora_1 = loraUrl;
  return spec;
}
