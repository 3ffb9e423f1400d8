/**
 * One model file's download: streamed to `<file>.part`, resumed with a Range request after a
 * cut, checked for size and for the GGUF magic, and only then renamed to its final name, so
 * the final name existing means the file is whole. Beside the part, `<file>.part.json` keeps the
 * size the host announced when the part was begun: a part whose file has since changed on the
 * host is started over, never completed with bytes of another version.
 */
import { createWriteStream } from 'node:fs';
import { open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { Logger } from '../../../core/ports.js';
import { ModelFileError } from './model-file-error.js';
import { discard, headerText, type ModelHost, sizeHeader, TransientFailure } from './model-host.js';

/** How far a download has come. */
export interface ModelFetchProgress {
  /** Bytes of the file on disk, a resumed part included. */
  receivedBytes: number;
  /** Unknown only when the host did not say. */
  totalBytes?: number;
  /** 0–100, one decimal; 100 only once every byte is in. */
  percent?: number;
  /** Average since this download (not the part resumed) began. */
  bytesPerSecond?: number;
  secondsLeft?: number;
}

const partRecordSchema = z.object({ source: z.string(), totalBytes: z.number().int().nonnegative().optional() });
type PartRecord = z.infer<typeof partRecordSchema>;

const GGUF_MAGIC = Buffer.from('GGUF', 'ascii');
const REPORT_INTERVAL_MS = 250;
const LOG_INTERVAL_MS = 5000;

export interface DownloadOptions {
  host: ModelHost;
  url: URL;
  /** The final path; `<target>.part` and `<target>.part.json` are written beside it. */
  target: string;
  /** The model as the person named it, for messages and the log. */
  label: string;
  logger: Logger;
  onProgress: (progress: ModelFetchProgress) => void;
}

/** Downloads `url` to `target`; the caller holds the lock on `target`. */
export async function downloadModelFile(options: DownloadOptions): Promise<void> {
  const { host, target, label, logger } = options;
  const partPath = `${target}.part`;
  const meter = new ProgressMeter(options.onProgress, logger, { model: label });
  await host.withRetries(label, () => attempt(options, partPath, meter), () => meter.takeProgress());
  await checkMagic(partPath, label);
  await rename(partPath, target);
  await rm(recordPathOf(target), { force: true });
  meter.finish(target);
}

async function attempt(options: DownloadOptions, partPath: string, meter: ProgressMeter): Promise<void> {
  const { host, url, label } = options;
  const recordPath = recordPathOf(options.target);
  const record = await readRecord(recordPath);
  // A part without its record cannot be checked against the host's file: it is started over.
  const offset = record === undefined ? 0 : await sizeOf(partPath);
  const { response, linkedSize } = await host.open(url, label, { 'accept-encoding': 'identity', ...(offset > 0 ? { range: `bytes=${offset}-` } : {}) });
  const { statusCode: status, headers, body } = response;

  if (status === 416) {
    discard(body);
    const total = contentRange(headerText(headers['content-range']))?.total;
    // The part was already whole (the process stopped between the last byte and the rename).
    if (total !== undefined && total === offset && (linkedSize ?? total) === total) return meter.complete(offset, total);
    return startOver(options, offset, partPath, meter, 'the host refused the range of the part kept');
  }
  if (status !== 200 && status !== 206) {
    discard(body);
    throw host.statusFailure(status, url, label);
  }

  const range = status === 206 ? contentRange(headerText(headers['content-range'])) : undefined;
  if (status === 206 && range?.start !== offset) {
    discard(body);
    return startOver(options, offset, partPath, meter, 'the host answered another range than the one asked for');
  }
  const start = status === 206 ? offset : 0;
  const announced = status === 206 ? range?.total : sizeHeader(headers['content-length']);
  if (linkedSize !== undefined && announced !== undefined && linkedSize !== announced) {
    discard(body);
    throw new ModelFileError('MODEL_DOWNLOAD_FAILED', `${url.origin} announced ${linkedSize} bytes for ${label} but sent a file of ${announced}: nothing was kept. Try again later, or check HF_ENDPOINT.`);
  }
  const expected = linkedSize ?? announced;
  if (start > 0 && record?.totalBytes !== expected) {
    discard(body);
    return startOver(options, offset, partPath, meter, 'the file changed on the host since the part was begun');
  }
  if (start === 0) await writeRecord(recordPath, { source: url.href, ...(expected === undefined ? {} : { totalBytes: expected }) });

  meter.begin(start, expected);
  let written = start;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      written += chunk.length;
      if (expected !== undefined && written > expected) {
        callback(new ModelFileError('MODEL_DOWNLOAD_FAILED', `${url.origin} sent more than the ${expected} bytes it announced for ${label}: try again later, or check HF_ENDPOINT.`));
        return;
      }
      meter.add(chunk.length);
      callback(null, chunk);
    },
  });
  try {
    await pipeline(body, counter, createWriteStream(partPath, { flags: start === 0 ? 'w' : 'a' }));
  } catch (error) {
    if (error instanceof ModelFileError) await rm(partPath, { force: true });
    throw error;
  }

  const size = await sizeOf(partPath);
  if (expected === undefined) {
    options.logger.warn({ model: label, receivedBytes: size }, 'model host did not say the file size; what arrived is taken as whole');
    return meter.complete(size, size);
  }
  // undici notices a body shorter than its Content-Length; this catches a chunked answer that
  // ended early, measured against x-linked-size.
  if (size < expected) {
    throw new TransientFailure(new ModelFileError('MODEL_DOWNLOAD_FAILED', `The download of ${label} from ${url.origin} kept ending early (${size} of ${expected} bytes); what arrived is kept: run npm run model:fetch to resume.`));
  }
  return meter.complete(size, expected);
}

async function startOver(options: DownloadOptions, offset: number, partPath: string, meter: ProgressMeter, reason: string): Promise<void> {
  // Without a part there was no range to ask for: a host that still answers with one would
  // have us start over forever.
  if (offset === 0) throw new ModelFileError('MODEL_DOWNLOAD_FAILED', `${options.url.origin} answered ${options.label} with a range nobody asked for (${reason}): check HF_ENDPOINT or the URL in LLM_MODEL.`);
  options.logger.info({ model: options.label, reason }, 'model download starts over');
  await rm(partPath, { force: true });
  await rm(recordPathOf(options.target), { force: true });
  return attempt(options, partPath, meter);
}

/** A host can answer 200 with a login or error page: refuse anything that is not a GGUF file. */
async function checkMagic(partPath: string, label: string): Promise<void> {
  const file = await open(partPath, 'r');
  const start = Buffer.alloc(GGUF_MAGIC.length);
  try {
    await file.read(start, 0, start.length, 0);
  } finally {
    await file.close();
  }
  if (start.equals(GGUF_MAGIC)) return;
  await rm(partPath, { force: true });
  throw new ModelFileError('MODEL_INVALID', `What arrived for ${label} is not a GGUF file (it begins ${JSON.stringify(start.toString('latin1'))}): check that LLM_MODEL names a .gguf file, and HF_ENDPOINT.`);
}

function contentRange(value: string | undefined): { start?: number; total?: number } | undefined {
  const match = value === undefined ? null : /^bytes (?:(\d+)-\d+|\*)\/(\d+|\*)$/.exec(value.trim());
  if (!match) return undefined;
  return { ...(match[1] === undefined ? {} : { start: Number(match[1]) }), ...(match[2] === '*' || match[2] === undefined ? {} : { total: Number(match[2]) }) };
}

function recordPathOf(target: string): string {
  return `${target}.part.json`;
}

async function readRecord(recordPath: string): Promise<PartRecord | undefined> {
  try {
    return partRecordSchema.parse(JSON.parse(await readFile(recordPath, 'utf8')));
  } catch {
    return undefined;
  }
}

async function writeRecord(recordPath: string, record: PartRecord): Promise<void> {
  await writeFile(recordPath, `${JSON.stringify(record)}\n`);
}

async function sizeOf(filePath: string): Promise<number> {
  try {
    return (await stat(filePath)).size;
  } catch {
    return 0;
  }
}

/** Turns bytes into progress reports (at most four a second) and log lines (every 5 s or 10 %). */
class ProgressMeter {
  readonly #report: (progress: ModelFetchProgress) => void;
  readonly #logger: Logger;
  readonly #fields: Record<string, unknown>;
  #startedAt: number | undefined;
  #sessionBytes = 0;
  #receivedBytes = 0;
  #totalBytes: number | undefined;
  #lastReportAt = Number.NEGATIVE_INFINITY;
  #lastLogAt = Number.NEGATIVE_INFINITY;
  #lastLoggedTenth = -1;
  #progressed = false;
  #flowing = false;

  constructor(report: (progress: ModelFetchProgress) => void, logger: Logger, fields: Record<string, unknown>) {
    this.#report = report;
    this.#logger = logger;
    this.#fields = fields;
  }

  begin(receivedBytes: number, totalBytes: number | undefined): void {
    this.#startedAt ??= performance.now();
    if (this.#lastLoggedTenth < 0) this.#logger.info({ ...this.#fields, receivedBytes, totalBytes }, receivedBytes > 0 ? 'model download resumed' : 'model download started');
    this.#receivedBytes = receivedBytes;
    this.#totalBytes = totalBytes;
    this.#flowing = false;
    this.#emit(true, false);
  }

  add(bytes: number): void {
    this.#receivedBytes += bytes;
    this.#sessionBytes += bytes;
    this.#progressed = true;
    // The first bytes of each attempt are reported at once: they say the host is sending.
    this.#emit(!this.#flowing);
    this.#flowing = true;
  }

  complete(receivedBytes: number, totalBytes: number): void {
    this.#receivedBytes = receivedBytes;
    this.#totalBytes = totalBytes;
    this.#emit(true);
  }

  finish(path: string): void {
    const seconds = this.#startedAt === undefined ? 0 : (performance.now() - this.#startedAt) / 1000;
    this.#logger.info({ ...this.#fields, path, bytes: this.#receivedBytes, seconds: Math.round(seconds * 10) / 10 }, 'model downloaded');
  }

  /** Whether bytes came since the last call: a retry after progress does not count as a failure in a row. */
  takeProgress(): boolean {
    const progressed = this.#progressed;
    this.#progressed = false;
    return progressed;
  }

  #emit(force: boolean, log = true): void {
    const now = performance.now();
    if (!force && now - this.#lastReportAt < REPORT_INTERVAL_MS) return;
    this.#lastReportAt = now;
    const progress = this.#snapshot(now);
    this.#report(progress);
    if (!log) return;
    const tenth = progress.percent === undefined ? -1 : Math.floor(progress.percent / 10);
    if (now - this.#lastLogAt < LOG_INTERVAL_MS && tenth <= this.#lastLoggedTenth) return;
    this.#lastLogAt = now;
    this.#lastLoggedTenth = Math.max(tenth, 0);
    const { bytesPerSecond, ...rest } = progress;
    this.#logger.info({ ...this.#fields, ...rest, megabytesPerSecond: bytesPerSecond === undefined ? undefined : Math.round(bytesPerSecond / 100_000) / 10 }, 'model download progress');
  }

  #snapshot(now: number): ModelFetchProgress {
    const received = this.#receivedBytes;
    const total = this.#totalBytes;
    const elapsedSeconds = this.#startedAt === undefined ? 0 : (now - this.#startedAt) / 1000;
    const bytesPerSecond = this.#sessionBytes > 0 && elapsedSeconds > 0 ? Math.round(this.#sessionBytes / elapsedSeconds) : undefined;
    const progress: ModelFetchProgress = { receivedBytes: received };
    if (total !== undefined) {
      progress.totalBytes = total;
      progress.percent = total === 0 || received >= total ? 100 : Math.floor((received / total) * 1000) / 10;
    }
    if (bytesPerSecond !== undefined) {
      progress.bytesPerSecond = bytesPerSecond;
      if (total !== undefined) progress.secondsLeft = Math.ceil(Math.max(total - received, 0) / bytesPerSecond);
    }
    return progress;
  }
}
