/**
 * A fake AUTOMATIC1111 web UI API (`--api`) on 127.0.0.1 (shared/notes/engines-wire.md):
 * txt2img one run at a time behind a queue lock, answering base64 PNGs and `info` as a JSON
 * string; `/progress` of the current run; `/interrupt`, which makes the running txt2img
 * return early with what it has, as A1111 does; the LoRA list, which sees files copied in
 * only after `/refresh-loras`; optional `--api-auth`; and A1111's error bodies.
 */
import type { ServerResponse } from 'node:http';
import { fakePicture } from './fake-pictures.js';
import { type LoopbackServer, type RecordedRequest, pause, sendJson, startLoopbackServer } from './loopback-server.js';

export interface FakeA1111Options {
  /** LoRA names installed and listed from the start. */
  loras?: string[];
  /** `user:pass` that HTTP Basic must carry, as with `--api-auth`. */
  auth?: string;
  /** Time per sampling step (default 2 ms); the request's `steps` sets how many. */
  stepMs?: number;
  /** Makes A1111 generate with another seed, as a seed-overriding script would. */
  overrideSeed?: number;
  /** Replaces each PNG before it is sent, e.g. with JPEG bytes as when A1111 saves JPEG. */
  transcode?: (png: Buffer) => Buffer;
}

export interface FakeA1111Run {
  prompt: string;
  seed: number;
  width: number;
  height: number;
  batchSize: number;
  /** LoRAs the prompt tags named that were installed, as `name:weight`. */
  appliedLoras: string[];
  interrupted: boolean;
}

export interface FakeA1111 extends LoopbackServer {
  readonly runs: FakeA1111Run[];
  readonly running: number;
  readonly maxRunning: number;
  /** Puts a LoRA file into models/Lora; it is listed only after `/sdapi/v1/refresh-loras`. */
  copyLora(name: string): void;
  /** The next txt2img fails as an exception inside A1111 (500). */
  failNext(message: string): void;
  /** Holds every run halfway until `release()`. */
  hold(): void;
  release(): void;
}

const SAMPLERS = ['Euler a', 'Euler', 'DPM++ 2M', 'DPM++ 2M Karras', 'DPM++ SDE', 'DDIM'];
const LORA_TAG = /<lora:([^:>]+):([\d.]+)>/g;

interface Current {
  step: number;
  steps: number;
  interrupted: boolean;
}

export async function startFakeA1111(options: FakeA1111Options = {}): Promise<FakeA1111> {
  const onDisk = new Set(options.loras ?? []);
  let listed = new Set(onDisk);
  const runs: FakeA1111Run[] = [];
  const failures: string[] = [];
  let queue: Promise<unknown> = Promise.resolve();
  let current: Current | undefined;
  let running = 0;
  let maxRunning = 0;
  let held = false;
  let closed = false;
  const stepMs = options.stepMs ?? 2;

  const txt2img = async (request: RecordedRequest, response: ServerResponse): Promise<void> => {
    const body = (request.json ?? {}) as Record<string, unknown>;
    const problems = validationProblems(body);
    if (problems.length > 0) {
      sendJson(response, 422, { detail: problems.map(([field, message]) => ({ loc: ['body', field], msg: message, type: 'type_error' })) });
      return;
    }
    const sampler = body['sampler_name'];
    if (sampler !== undefined && !SAMPLERS.includes(String(sampler))) {
      sendJson(response, 404, { error: 'HTTPException', detail: 'Sampler not found', body: '', errors: '404: Sampler not found' });
      return;
    }
    // A1111 takes one generation at a time; the others wait on its queue lock.
    const turn = queue.then(() => generate(body));
    queue = turn.catch(() => undefined);
    const outcome = await turn;
    if (closed) return;
    if (typeof outcome === 'string') sendJson(response, 500, { error: 'RuntimeError', detail: '', body: '', errors: outcome });
    else sendJson(response, 200, outcome);
  };

  const generate = async (body: Record<string, unknown>): Promise<string | Record<string, unknown>> => {
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    const steps = Number(body['steps'] ?? 20);
    current = { step: 0, steps, interrupted: false };
    const run = current;
    try {
      for (let step = 1; step <= steps && !run.interrupted && !closed; step++) {
        await pause(stepMs);
        run.step = step;
        while (step === Math.ceil(steps / 2) && held && !run.interrupted && !closed) await pause(5);
      }
      const failure = failures.shift();
      if (failure !== undefined) return failure;
      return answer(body, run.interrupted);
    } finally {
      running -= 1;
      current = undefined;
    }
  };

  const answer = (body: Record<string, unknown>, interrupted: boolean): Record<string, unknown> => {
    const prompt = String(body['prompt']);
    const appliedLoras = [...prompt.matchAll(LORA_TAG)].filter((match) => listed.has(match[1]!)).map((match) => `${match[1]}:${match[2]}`);
    const seed = options.overrideSeed ?? Number(body['seed'] ?? -1);
    const batchSize = Number(body['batch_size'] ?? 1);
    const width = Number(body['width'] ?? 512);
    const height = Number(body['height'] ?? 512);
    const seeds = Array.from({ length: batchSize }, (_, index) => seed + index);
    runs.push({ prompt, seed, width, height, batchSize, appliedLoras, interrupted });
    const images = seeds.map((imageSeed, index) => {
      const png = fakePicture({ prompt: prompt.replace(LORA_TAG, '').trim(), seed: imageSeed, width, height, index, salt: `${appliedLoras.join(',')}${interrupted ? ':noisy' : ''}` });
      return (options.transcode?.(png) ?? png).toString('base64');
    });
    const info = {
      prompt,
      all_prompts: seeds.map(() => prompt),
      negative_prompt: body['negative_prompt'] ?? '',
      all_negative_prompts: seeds.map(() => body['negative_prompt'] ?? ''),
      seed,
      all_seeds: seeds,
      subseed: 1234,
      all_subseeds: seeds.map((_, index) => 1234 + index),
      subseed_strength: 0,
      width,
      height,
      sampler_name: body['sampler_name'] ?? 'DPM++ 2M',
      cfg_scale: body['cfg_scale'] ?? 7,
      steps: body['steps'] ?? 20,
      batch_size: batchSize,
      restore_faces: false,
      sd_model_name: 'sd_xl_base_1.0',
      sd_model_hash: '31e35c80fc',
      extra_generation_params: appliedLoras.length > 0 ? { 'Lora hashes': appliedLoras.map((lora) => `${lora.split(':')[0]}: 0123456789ab`).join(', ') } : {},
      index_of_first_image: 0,
      infotexts: seeds.map((imageSeed) => `${prompt}\nSteps: ${String(body['steps'])}, Seed: ${imageSeed}, Size: ${width}x${height}`),
      styles: [],
      job_timestamp: '20250101000000',
      version: 'v1.10.1',
    };
    return { images, parameters: { ...body, send_images: true, save_images: false }, info: JSON.stringify(info) };
  };

  const server = await startLoopbackServer(async (request, response) => {
    if (options.auth !== undefined && request.headers.authorization !== `Basic ${Buffer.from(options.auth).toString('base64')}`) {
      sendJson(response, 401, { detail: 'Incorrect username or password' }, { 'www-authenticate': 'Basic' });
      return;
    }
    const { method, path } = request;
    if (method === 'POST' && path === '/sdapi/v1/txt2img') await txt2img(request, response);
    else if (method === 'GET' && path === '/sdapi/v1/progress') {
      const progress = current === undefined ? 0 : current.step / current.steps;
      const remaining = current === undefined ? 0 : ((current.steps - current.step) * stepMs) / 1000;
      sendJson(response, 200, {
        progress,
        eta_relative: remaining,
        state: { skipped: false, interrupted: current?.interrupted ?? false, job: current === undefined ? '' : 'txt2img', job_count: current === undefined ? 0 : 1, job_timestamp: '20250101000000', job_no: 0, sampling_step: current?.step ?? 0, sampling_steps: current?.steps ?? 0 },
        current_image: null,
        textinfo: null,
      });
    } else if (method === 'POST' && path === '/sdapi/v1/interrupt') {
      if (current !== undefined) current.interrupted = true;
      sendJson(response, 200, {});
    } else if (method === 'GET' && path === '/sdapi/v1/loras') {
      sendJson(response, 200, [...listed].map((name) => ({ name, alias: name, path: `/stable-diffusion-webui/models/Lora/${name}.safetensors`, metadata: {} })));
    } else if (method === 'POST' && path === '/sdapi/v1/refresh-loras') {
      listed = new Set(onDisk);
      sendJson(response, 200, null);
    } else sendJson(response, 404, { detail: 'Not Found' });
  });

  return {
    ...server,
    runs,
    get running() {
      return running;
    },
    get maxRunning() {
      return maxRunning;
    },
    copyLora: (name) => void onDisk.add(name),
    failNext: (message) => void failures.push(message),
    hold: () => void (held = true),
    release: () => void (held = false),
    close: async () => {
      closed = true;
      await server.close();
    },
  };
}

/** FastAPI's checks on the txt2img model, as `[field, message]`. */
function validationProblems(body: Record<string, unknown>): Array<[string, string]> {
  const problems: Array<[string, string]> = [];
  if (body['prompt'] !== undefined && typeof body['prompt'] !== 'string') problems.push(['prompt', 'str type expected']);
  for (const field of ['width', 'height', 'steps', 'batch_size', 'n_iter', 'seed']) {
    if (body[field] !== undefined && !Number.isInteger(body[field])) problems.push([field, 'value is not a valid integer']);
  }
  if (body['cfg_scale'] !== undefined && typeof body['cfg_scale'] !== 'number') problems.push(['cfg_scale', 'value is not a valid float']);
  return problems;
}
