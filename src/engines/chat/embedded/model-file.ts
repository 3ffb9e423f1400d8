/**
 * Turns the `LLM_MODEL` setting into a local GGUF file for the embedded engine, downloading it
 * on first start. A file already in place is returned without any network call, so a second
 * start works offline; a download is resumable, size-checked, done by one process at a time
 * per models directory, and fails in seconds when the host cannot be reached.
 */
import { readdir, stat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../../core/ports.js';
import { downloadModelFile, type ModelFetchProgress } from './model-download.js';
import { ModelFileError } from './model-file-error.js';
import { ModelHost } from './model-host.js';
import { lockModelFile } from './model-lock.js';
import { availableQuants, findQuantFile, parseModelSource, storedPath, type ModelSource } from './model-source.js';

export type { ModelFetchProgress } from './model-download.js';
export { ModelFileError, type ModelFileErrorCode } from './model-file-error.js';

/** Where resolving the model file stands; `failed` comes just before the promise rejects (an abort rejects without it). */
export type ModelFileState =
  | { state: 'checking' }
  | ({ state: 'downloading' } & ModelFetchProgress)
  /** Another process holds the lock on this file and is fetching it. */
  | { state: 'waiting-for-other-process' }
  | { state: 'ready'; path: string }
  | { state: 'failed'; error: ModelFileError };

export interface ResolveModelFileOptions {
  /** `LLM_MODEL`: a path to a .gguf, `hf:owner/repo/file.gguf`, `hf:owner/repo:QUANT` or an http(s) URL of a .gguf. */
  model: string;
  /** Where downloads are kept (`$DATA_DIR/models`): `<directory>/<owner>/<repo>/<file>`. */
  directory: string;
  /** `HF_ENDPOINT` (default https://huggingface.co) and `HF_TOKEN`, sent only to that endpoint's origin. */
  huggingFace: { endpoint: string; token?: string | undefined };
  logger: Logger;
  onState?: (state: ModelFileState) => void;
  /** Stops everything promptly (requests, retries, the wait for another process), rejecting with its reason. */
  signal?: AbortSignal;
  /** Longest wait for a connection (default 10 s): an unreachable host fails in seconds. */
  connectTimeoutMs?: number;
  /** Longest wait for an answer once connected (default 30 s). */
  headersTimeoutMs?: number;
  /** Longest silence while the file streams in (default 30 s); the download is then resumed. */
  idleTimeoutMs?: number;
  /** First pause before a retry, doubling each time (default 1 s). */
  retryDelayMs?: number;
}

export const MODEL_FILE_DEFAULTS = { connectTimeoutMs: 10_000, headersTimeoutMs: 30_000, idleTimeoutMs: 30_000, retryDelayMs: 1000 } as const;

/**
 * The absolute path of the model's .gguf file, downloaded first when needed. Rejects with a
 * `ModelFileError` whose message says what the person should do, or with the signal's reason.
 */
export async function resolveModelFile(options: ResolveModelFileOptions): Promise<string> {
  const report = options.onState ?? (() => undefined);
  report({ state: 'checking' });
  try {
    const file = await locate(options, report);
    report({ state: 'ready', path: file });
    return file;
  } catch (error) {
    if (error instanceof ModelFileError) report({ state: 'failed', error });
    throw error;
  }
}

type StoredSource = Extract<ModelSource, { kind: 'hugging-face-file' | 'url' }>;

async function locate(options: ResolveModelFileOptions, report: (state: ModelFileState) => void): Promise<string> {
  const { model, logger } = options;
  const source = parseModelSource(model);
  if (source.kind === 'path') return localFile(source.path, model);
  const directory = path.resolve(options.directory);
  const present = source.kind === 'hugging-face-quant' ? await presentQuant(directory, source, model) : await existing(storedPath(directory, source));
  if (present !== undefined) {
    logger.debug({ model, path: present }, 'model file present');
    return present;
  }

  // Losing the lock to another process (we stalled past its stale time) stops our download.
  const lockLost = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, lockLost.signal]) : lockLost.signal;
  const host = new ModelHost({
    endpoint: options.huggingFace.endpoint,
    token: options.huggingFace.token,
    logger,
    signal,
    connectTimeoutMs: options.connectTimeoutMs ?? MODEL_FILE_DEFAULTS.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs ?? MODEL_FILE_DEFAULTS.headersTimeoutMs,
    idleTimeoutMs: options.idleTimeoutMs ?? MODEL_FILE_DEFAULTS.idleTimeoutMs,
    retryDelayMs: options.retryDelayMs ?? MODEL_FILE_DEFAULTS.retryDelayMs,
  });
  try {
    const stored: StoredSource = source.kind === 'hugging-face-quant' ? await chooseQuant(host, source, model) : source;
    const target = storedPath(directory, stored);
    if ((await existing(target)) !== undefined) return target;
    const url = stored.kind === 'url' ? stored.url : host.fileUrl(stored.owner, stored.repository, stored.file);
    await mkdir(path.dirname(target), { recursive: true });
    const release = await lockModelFile(target, {
      signal,
      onWaiting: () => {
        logger.info({ model, path: target }, 'another process is fetching the model file; waiting for it');
        report({ state: 'waiting-for-other-process' });
      },
      onCompromised: (cause) =>
        lockLost.abort(new ModelFileError('MODEL_DOWNLOAD_FAILED', `Another process took over the download of ${model} (this one stalled too long); start again to use its file.`, { cause })),
    });
    try {
      // The process we waited for has finished it.
      if ((await existing(target)) !== undefined) return target;
      await downloadModelFile({ host, url, target, label: model, logger, onProgress: (progress) => report({ state: 'downloading', ...progress }) });
      return target;
    } finally {
      await release();
    }
  } finally {
    await host.close();
  }
}

async function chooseQuant(host: ModelHost, source: Extract<ModelSource, { kind: 'hugging-face-quant' }>, model: string): Promise<StoredSource> {
  const files = await host.listRepository(source.owner, source.repository);
  const file = findQuantFile(files, source.quant, model);
  if (file === undefined) {
    const offered = availableQuants(files);
    throw new ModelFileError(
      'MODEL_NOT_FOUND',
      `hf:${source.owner}/${source.repository} has no .gguf file for ${source.quant}${offered.length > 0 ? `; it offers ${offered.join(', ')}` : ' (it has no .gguf file at all)'}. Set LLM_MODEL to one of them.`,
    );
  }
  return { kind: 'hugging-face-file', owner: source.owner, repository: source.repository, file };
}

/** A whole file of the quant already downloaded, so that `:QUANT` needs no listing offline. */
async function presentQuant(directory: string, source: Extract<ModelSource, { kind: 'hugging-face-quant' }>, model: string): Promise<string | undefined> {
  const folder = path.join(directory, source.owner, source.repository);
  let names: string[];
  try {
    names = await readdir(folder, { recursive: true });
  } catch {
    return undefined;
  }
  const file = findQuantFile(names.map((name) => name.split(path.sep).join('/')), source.quant, model);
  return file === undefined ? undefined : existing(path.join(folder, file));
}

async function localFile(file: string, model: string): Promise<string> {
  let isFile: boolean;
  try {
    isFile = (await stat(file)).isFile();
  } catch {
    const looksLikeRepository = !path.isAbsolute(model) && !model.startsWith('.') && model.split('/').length >= 3;
    throw new ModelFileError(
      'MODEL_NOT_FOUND',
      `LLM_MODEL=${model}: there is no file at ${file}. Set LLM_MODEL to the path of a .gguf file, or to hf:owner/repo/file.gguf or hf:owner/repo:QUANT to download one${looksLikeRepository ? ` (did you mean hf:${model}?)` : ''}.`,
    );
  }
  if (!isFile) throw new ModelFileError('MODEL_INVALID', `LLM_MODEL=${model}: ${file} is a folder; set LLM_MODEL to the .gguf file itself.`);
  return file;
}

/** The path when a file (never a part or a folder) is there: the final name exists only once the download was checked. */
async function existing(file: string): Promise<string | undefined> {
  try {
    return (await stat(file)).isFile() ? file : undefined;
  } catch {
    return undefined;
  }
}
