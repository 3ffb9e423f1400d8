/**
 * The AUTOMATIC1111 / Forge API wire format (`--api`): the txt2img body from our payload, the
 * LoRA list and progress answers, and the checks on a txt2img answer, whose `info` is a JSON
 * document inside a string. Readers take `unknown` and trust no field.
 */
import type { ImageRequest } from '../../core/ports.js';

export interface A1111Txt2ImgBody {
  prompt: string;
  negative_prompt: string;
  width: number;
  height: number;
  batch_size: number;
  n_iter: 1;
  seed: number;
  cfg_scale: number;
  steps: number;
  sampler_name?: string;
}

/** The LoRA file name (without `.safetensors`) a face model is installed under. */
export function loraName(prefix: string, faceModelId: string): string {
  return `${prefix}${faceModelId}`;
}

/**
 * The txt2img body. A face model rides as a `<lora:name:weight>` prompt tag; its trigger
 * token is already in the prompt. A1111 has no face inpainting or prompt strength for
 * txt2img, so those payload fields have no counterpart here.
 */
export function txt2imgBody(request: ImageRequest, options: { loraPrefix: string; samplerName?: string | undefined }): A1111Txt2ImgBody {
  const { payload, faceModel } = request;
  const tag = faceModel === null ? '' : ` <lora:${loraName(options.loraPrefix, faceModel.id)}:${payload.loraScale ?? 1}>`;
  const body: A1111Txt2ImgBody = {
    prompt: `${payload.prompt}${tag}`,
    negative_prompt: payload.negativePrompt,
    width: payload.width,
    height: payload.height,
    batch_size: payload.samples,
    n_iter: 1,
    seed: payload.seed,
    cfg_scale: payload.guidanceScale,
    steps: payload.steps,
  };
  if (options.samplerName !== undefined) body.sampler_name = options.samplerName;
  return body;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Whether `GET /sdapi/v1/loras` lists `name`; the prompt tag matches a file name or its alias. */
export function listsLora(body: unknown, name: string): boolean {
  if (!Array.isArray(body)) return false;
  return body.some((entry) => isRecord(entry) && (entry['name'] === name || entry['alias'] === name));
}

/** The 0..1 `progress` of `GET /sdapi/v1/progress`; undefined while idle or when unreadable. */
export function progressOf(body: unknown): number | undefined {
  if (!isRecord(body)) return undefined;
  const progress = body['progress'];
  return typeof progress === 'number' && Number.isFinite(progress) && progress > 0 ? progress : undefined;
}

/**
 * The base64 images of a txt2img answer after checking it: `info` must parse and carry the
 * seed we sent (else a script or extension overrode it and the result would not be
 * reproducible), and there must be one image per output. Grids and extension extras are
 * skipped: the run's images start at `index_of_first_image`.
 */
export function imagesOf(body: unknown, expected: { seed: number; count: number }): { images: string[] } | { problem: string } {
  if (!isRecord(body) || !Array.isArray(body['images'])) return { problem: 'answered txt2img without an images list' };
  const infoText = body['info'];
  let info: unknown;
  try {
    info = typeof infoText === 'string' ? (JSON.parse(infoText) as unknown) : infoText;
  } catch {
    return { problem: 'answered txt2img with an info field that is not JSON' };
  }
  if (!isRecord(info)) return { problem: 'answered txt2img without its info document' };
  const seeds = Array.isArray(info['all_seeds']) ? info['all_seeds'] : [info['seed']];
  if (seeds[0] !== expected.seed) return { problem: `generated with seed ${String(seeds[0])} instead of ${expected.seed}; a script or extension overrides the seed` };
  const first = typeof info['index_of_first_image'] === 'number' ? info['index_of_first_image'] : 0;
  const images = body['images'].slice(first, first + expected.count).filter((image): image is string => typeof image === 'string' && image !== '');
  if (images.length < expected.count) return { problem: `returned ${images.length} of the ${expected.count} images asked for` };
  return { images };
}
