/**
 * An `ImageEngine` over the AUTOMATIC1111 / Forge web UI API (started with `--api`).
 *
 * txt2img answers only once the images exist, so progress comes from polling
 * `/sdapi/v1/progress` meanwhile. A1111 keeps no job ids: a restarted run simply generates
 * again (the same seed gives the same images). Face models are LoRA files that must already
 * sit on that server; the adapter checks before generating and says how to install one.
 */
import type { Dispatcher } from 'undici';
import type { EngineFile, EngineRun, ImageEngine, ImageRequest } from '../../core/ports.js';
import type { EngineTimeouts } from '../http.js';
import { imagesOf, listsLora, loraName, progressOf, txt2imgBody } from './a1111-wire.js';
import { fromBase64, imageFile } from './engine-files.js';
import { BLOCKING_HEADERS_TIMEOUT_MS, type ImageHttp, type ImageHttpAnswer, createImageHttp, isSuccess } from './engine-http.js';
import { cancelsRemoteWork, forwardProgress, sleep } from './wait.js';

export const A1111_PROVIDER = 'automatic1111';

export interface A1111ImageOptions extends EngineTimeouts {
  /** e.g. `http://127.0.0.1:7860`. */
  baseURL: string;
  /** `user:pass` when A1111 runs with `--api-auth`; sent as HTTP Basic. */
  apiKey?: string;
  /** Runs at once; A1111 works one at a time (default 1). */
  concurrency?: number;
  /** How often progress is polled while txt2img runs (default 1000 ms). */
  pollIntervalMs?: number;
  /** Face model `id` is installed as `models/Lora/<loraPrefix><id>.safetensors` (default `likeness-`). */
  loraPrefix?: string;
  /** `sampler_name`, e.g. `DPM++ 2M`; A1111's own default when absent. */
  samplerName?: string;
  /** Wait for txt2img's answer headers, i.e. the whole generation (default 10 minutes). */
  headersTimeoutMs?: number;
  dispatcher?: Dispatcher;
}

const LABEL = 'AUTOMATIC1111';
/** How long the best-effort interrupt after an abort may take. */
const INTERRUPT_TIMEOUT_MS = 5_000;

/** The A1111 engine; `close()` releases its connections. */
export function createA1111ImageEngine(options: A1111ImageOptions): ImageEngine {
  const http = createImageHttp({
    provider: A1111_PROVIDER,
    label: LABEL,
    purpose: 'image',
    baseURL: options.baseURL,
    headers: options.apiKey === undefined ? {} : { authorization: `Basic ${Buffer.from(options.apiKey).toString('base64')}` },
    dispatcher: options.dispatcher,
    connectTimeoutMs: options.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? BLOCKING_HEADERS_TIMEOUT_MS,
    bodyTimeoutMs: options.bodyTimeoutMs,
  });
  const loraPrefix = options.loraPrefix ?? 'likeness-';
  const pollIntervalMs = options.pollIntervalMs ?? 1000;

  const generate = async (request: ImageRequest, run: EngineRun): Promise<EngineFile[]> => {
    const { signal } = run;
    signal.throwIfAborted();
    if (request.faceModel !== null) await ensureLora(http, loraName(loraPrefix, request.faceModel.id), request.faceModel.id, signal);
    const body = txt2imgBody(request, { loraPrefix, samplerName: options.samplerName });
    const externalId = `a1111:${request.jobId}`;
    // Nothing to resume at A1111: a restarted run generates again under the same id.
    if (run.resumeId !== externalId) await run.submitted(externalId);
    signal.throwIfAborted();
    const progress = followProgress(http, pollIntervalMs, run);
    let answer: ImageHttpAnswer;
    try {
      answer = await http.exchange({ method: 'POST', target: '/sdapi/v1/txt2img', json: body, signal });
    } catch (thrown) {
      if (signal.aborted) {
        // A1111 does not notice a closed connection and would finish the images for no one.
        if (cancelsRemoteWork(signal)) await interrupt(http);
        throw signal.reason;
      }
      throw thrown;
    } finally {
      await progress.stop();
    }
    if (!isSuccess(answer)) throw http.failure(answer);
    const result = imagesOf(http.parse(answer), { seed: body.seed, count: body.batch_size });
    if ('problem' in result) throw http.client.error(`${LABEL} ${result.problem}.`, { retryable: false });
    return Promise.all(result.images.map((image, index) => imageFile(http, fromBase64(image), undefined, `${LABEL} image ${index + 1}`)));
  };

  return {
    provider: A1111_PROVIDER,
    concurrency: options.concurrency ?? 1,
    generate,
    close: () => http.close(),
  };
}

/**
 * Makes sure A1111 lists the face model's LoRA. A file copied in since A1111 started shows
 * only after a refresh, so one refresh is tried before telling the operator what to do.
 */
async function ensureLora(http: ImageHttp, name: string, faceModelId: string, signal: AbortSignal): Promise<void> {
  if (listsLora(await http.json({ target: '/sdapi/v1/loras', signal }), name)) return;
  await http.json({ method: 'POST', target: '/sdapi/v1/refresh-loras', signal });
  if (listsLora(await http.json({ target: '/sdapi/v1/loras', signal }), name)) return;
  throw http.client.error(
    `Face model ${faceModelId} is not installed on the ${LABEL} server at ${http.client.displayURL}. ` +
      `Extract lora.safetensors from the face model's archive (trained_model.tar), copy it to models/Lora/${name}.safetensors on that server, ` +
      'then refresh its LoRA list with POST /sdapi/v1/refresh-loras (or restart it).',
    {
      retryable: false,
      // Written by us and free of the server's address: the operator's next step, told to whoever asked.
      publicMessage:
        `Face model ${faceModelId} is not installed on the image server yet: the operator has to copy its lora.safetensors ` +
        `to models/Lora/${name}.safetensors there and refresh the server's LoRA list. Until then no image can use this face.`,
    },
  );
}

/** Polls progress until stopped; a failed poll is skipped, since progress is only a courtesy. */
function followProgress(http: ImageHttp, pollIntervalMs: number, run: EngineRun): { stop(): Promise<void> } {
  const stopper = new AbortController();
  const signal = AbortSignal.any([run.signal, stopper.signal]);
  const report = forwardProgress((fraction) => run.progress(fraction));
  const loop = (async () => {
    while (!signal.aborted) {
      try {
        await sleep(pollIntervalMs, signal);
        const fraction = progressOf(await http.json({ target: '/sdapi/v1/progress?skip_current_image=true', signal }));
        if (fraction !== undefined && !signal.aborted) report(fraction);
      } catch {
        // Stopped, or one poll failed: the loop condition decides.
      }
    }
  })();
  return {
    stop: async () => {
      stopper.abort();
      await loop;
    },
  };
}

/** Asks A1111 to stop the running generation; best effort, on its own short deadline. */
async function interrupt(http: ImageHttp): Promise<void> {
  try {
    await http.exchange({ method: 'POST', target: '/sdapi/v1/interrupt', signal: AbortSignal.timeout(INTERRUPT_TIMEOUT_MS) });
  } catch {
    // The run is already being abandoned; the abort reason is what the caller needs.
  }
}
