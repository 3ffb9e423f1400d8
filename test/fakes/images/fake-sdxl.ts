/**
 * The SDXL model that the fake Replicate and the fake Cog container run: it downloads
 * `lora_1` when given (as the real model does, failing the run when it cannot), prints tqdm
 * progress to its logs step by step, can be held halfway or made to fail, and makes one PNG
 * per output whose pixels depend on the prompt, seed, size, index and the LoRA's bytes.
 */
import { createHash } from 'node:crypto';
import { fakePicture, tqdmLine } from './fake-pictures.js';
import { pause } from './loopback-server.js';

/** The Cog/Replicate prediction envelope fields a run changes. */
export interface ModelRun {
  status: 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';
  logs: string;
  error: string | null;
  started_at: string | null;
  completed_at: string | null;
}

export interface ModelControls {
  stepMs: number;
  steps: number;
  /** While true, runs wait halfway. */
  held(): boolean;
  /** A failure message for this run, once, when one was scripted. */
  takeFailure(): string | undefined;
  /** True once the fake is closing: runs stop where they are. */
  closed(): boolean;
}

/** The switches tests flip on a fake model, and the controls its runs read them through. */
export interface ModelSwitches {
  readonly controls: ModelControls;
  readonly closed: boolean;
  hold(): void;
  release(): void;
  failNext(message: string): void;
  /** Stops every run where it is, as the fake closes. */
  shutDown(): void;
}

export function modelSwitches(options: { stepMs?: number | undefined; steps?: number | undefined }): ModelSwitches {
  const failures: string[] = [];
  let held = false;
  let closed = false;
  return {
    controls: {
      stepMs: options.stepMs ?? 5,
      steps: options.steps ?? 4,
      held: () => held,
      takeFailure: () => failures.shift(),
      closed: () => closed,
    },
    get closed() {
      return closed;
    },
    hold: () => void (held = true),
    release: () => void (held = false),
    failNext: (message) => void failures.push(message),
    shutDown: () => void (closed = true),
  };
}

export function newModelRun(): ModelRun {
  return { status: 'starting', logs: '', error: null, started_at: null, completed_at: null };
}

/** Problems with an SDXL input, as `[field, message]`; empty when it is valid. */
export function sdxlInputProblems(input: unknown): Array<[string, string]> {
  if (input === null || typeof input !== 'object') return [['input', 'Input should be a valid dictionary']];
  const record = input as Record<string, unknown>;
  const problems: Array<[string, string]> = [];
  if (typeof record['prompt'] !== 'string') problems.push(['prompt', 'Field required']);
  for (const field of ['width', 'height'] as const) {
    const value = record[field] ?? 1024;
    if (!Number.isInteger(value) || (value as number) < 64 || (value as number) > 1024) problems.push([field, 'Must be an integer from 64 to 1024']);
  }
  const outputs = record['num_outputs'] ?? 1;
  if (!Number.isInteger(outputs) || (outputs as number) < 1 || (outputs as number) > 4) problems.push(['num_outputs', 'Must be less than or equal to 4']);
  if (record['lora_1'] !== undefined && typeof record['lora_1'] !== 'string') problems.push(['lora_1', 'Input should be a valid string']);
  return problems;
}

/** Runs the model; returns its PNGs, or undefined when it failed or was canceled (see `run`). */
export async function runSdxl(run: ModelRun, input: Record<string, unknown>, controls: ModelControls): Promise<Buffer[] | undefined> {
  const stopped = (): boolean => run.status === 'canceled' || controls.closed();
  const finish = (status: 'failed' | 'succeeded', error: string | null = null): void => {
    run.status = status;
    run.error = error;
    run.completed_at = new Date().toISOString();
  };
  run.status = 'processing';
  run.started_at = new Date().toISOString();
  const seed = typeof input['seed'] === 'number' ? input['seed'] : 42;
  run.logs += `Using seed: ${seed}\nPrompt: ${String(input['prompt'])}\ntxt2img mode\n`;
  let salt = '';
  if (typeof input['lora_1'] === 'string') {
    run.logs += `Downloading LoRA weights from ${input['lora_1']}\n`;
    const archive = await download(input['lora_1']);
    if (stopped()) return undefined;
    if (typeof archive === 'string') {
      run.logs += `Traceback (most recent call last):\n  File "predict.py", line 210, in load_lora\nRuntimeError: ${archive}\n`;
      finish('failed', archive);
      return undefined;
    }
    // The weights travel as trained_model.tar; anything else cannot be a trainer's output.
    if (archive.toString('ascii', 257, 262) !== 'ustar') {
      const reason = `lora_1 (${input['lora_1']}) is not a tar archive of trained weights`;
      run.logs += `Traceback (most recent call last):\n  File "predict.py", line 214, in load_lora\ntarfile.ReadError: ${reason}\n`;
      finish('failed', reason);
      return undefined;
    }
    salt = `${createHash('sha256').update(archive).digest('hex')}:${String(input['lora_scale'] ?? 0.6)}`;
  }
  for (let step = 1; step <= controls.steps; step++) {
    await pause(controls.stepMs);
    if (stopped()) return undefined;
    run.logs += tqdmLine(step, controls.steps);
    while (step === Math.ceil(controls.steps / 2) && controls.held() && !stopped()) await pause(5);
    if (stopped()) return undefined;
  }
  const failure = controls.takeFailure();
  if (failure !== undefined) {
    run.logs += `Traceback (most recent call last):\n  File "predict.py", line 301, in predict\nRuntimeError: ${failure}\n`;
    finish('failed', failure);
    return undefined;
  }
  const pictures = Array.from({ length: Number(input['num_outputs'] ?? 1) }, (_, index) =>
    fakePicture({
      prompt: String(input['prompt']),
      seed,
      width: Number(input['width'] ?? 1024),
      height: Number(input['height'] ?? 1024),
      index,
      salt,
    }),
  );
  finish('succeeded');
  return pictures;
}

/** The bytes at `url`, or the reason they could not be fetched. */
async function download(url: string): Promise<Buffer | string> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) return `Failed to download LoRA weights from ${url}: HTTP ${response.status}`;
    return Buffer.from(await response.arrayBuffer());
  } catch (error) {
    return `Failed to download LoRA weights from ${url}: ${error instanceof Error ? error.message : String(error)}`;
  }
}
