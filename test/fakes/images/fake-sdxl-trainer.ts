/**
 * The SDXL LoRA trainer that the fake Replicate runs for a training: it downloads
 * `input_images` (a zip URL, as the real trainer does), counts the photos in it, prints tqdm
 * steps, and produces a real `trained_model.tar` (`lora.safetensors`, `embeddings.pti`,
 * `special_params.json`) whose bytes depend on the photos.
 */
import { createHash } from 'node:crypto';
import { unzipSync } from 'fflate';
import { tqdmLine } from './fake-pictures.js';
import { pause } from './loopback-server.js';
import type { ModelControls, ModelRun } from './fake-sdxl.js';
import { ustar } from './ustar.js';

const PHOTO = /\.(jpe?g|png|webp)$/i;

/** Runs a training; returns the archive and photo count, or undefined when it failed or was canceled. */
export async function runSdxlTraining(
  run: ModelRun,
  input: Record<string, unknown>,
  controls: ModelControls,
): Promise<{ archive: Buffer; photoCount: number } | undefined> {
  const stopped = (): boolean => run.status === 'canceled' || controls.closed();
  const fail = (reason: string): undefined => {
    run.logs += `Traceback (most recent call last):\n  File "train.py", line 88, in train\nValueError: ${reason}\n`;
    run.status = 'failed';
    run.error = reason;
    run.completed_at = new Date().toISOString();
    return undefined;
  };
  run.status = 'processing';
  run.started_at = new Date().toISOString();
  const url = String(input['input_images']);
  run.logs += `Downloading input_images from ${url}\n`;
  let zip: Buffer;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return fail(`Could not download input_images: HTTP ${response.status}`);
    zip = Buffer.from(await response.arrayBuffer());
  } catch (error) {
    return fail(`Could not download input_images: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (stopped()) return undefined;
  let photoCount: number;
  try {
    const names = Object.keys(unzipSync(new Uint8Array(zip)));
    photoCount = names.filter((name) => PHOTO.test(name) && !name.startsWith('__MACOSX/')).length;
  } catch {
    return fail('input_images is not a zip file');
  }
  if (photoCount === 0) return fail('No images found in input_images');
  run.logs += `Found ${photoCount} images; using face detection for masks\n`;
  for (let step = 1; step <= controls.steps; step++) {
    await pause(controls.stepMs);
    if (stopped()) return undefined;
    run.logs += `Steps: ${tqdmLine(step, controls.steps)}`;
    while (step === Math.ceil(controls.steps / 2) && controls.held() && !stopped()) await pause(5);
    if (stopped()) return undefined;
  }
  const failure = controls.takeFailure();
  if (failure !== undefined) return fail(failure);
  const digest = createHash('sha512').update(zip).digest();
  const archive = ustar([
    { name: 'lora.safetensors', data: Buffer.concat(Array.from({ length: 64 }, () => digest)) },
    { name: 'embeddings.pti', data: digest },
    { name: 'special_params.json', data: Buffer.from(JSON.stringify({ [String(input['token_string'] ?? 'TOK')]: '<s0><s1>' })) },
  ]);
  run.status = 'succeeded';
  run.completed_at = new Date().toISOString();
  return { archive, photoCount };
}
