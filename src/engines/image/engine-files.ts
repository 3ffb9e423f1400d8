/**
 * Turning what an engine made into `EngineFile`s: base64 and `data:` URLs decoded, file URLs
 * downloaded (they expire, so they are fetched at once), and the real type read from the
 * bytes, since engines can be set to write JPEG or WebP whatever they declare.
 */
import { fileTypeFromBuffer } from 'file-type';
import type { EngineFile } from '../../core/ports.js';
import { isImageMimeType } from '../../core/media.js';
import { type ImageHttp, isSuccess } from './engine-http.js';

/** An image's bytes with the type sniffed from them, or `declared` when sniffing finds nothing. */
export async function imageFile(http: ImageHttp, data: Uint8Array, declared: string | undefined, origin: string): Promise<EngineFile> {
  const sniffed = (await fileTypeFromBuffer(data))?.mime;
  const declaredType = declared?.split(';')[0]?.trim().toLowerCase();
  const mimeType = sniffed ?? declaredType;
  if (mimeType === undefined || !isImageMimeType(mimeType)) {
    throw http.client.error(`${origin} is not a PNG, JPEG or WebP image (${sniffed ?? declaredType ?? 'unknown type'}, ${data.byteLength} bytes).`, { retryable: false });
  }
  return { data, mimeType };
}

/** The file URLs of a Cog-style output: a list of URLs, or one URL for single-file models. */
export function outputUrls(output: unknown): string[] {
  const items = Array.isArray(output) ? output : [output];
  return items.filter((item): item is string => typeof item === 'string' && item !== '');
}

/** Decodes plain base64, as A1111 sends images, tolerating a `data:` prefix. */
export function fromBase64(text: string): Uint8Array {
  const comma = text.startsWith('data:') ? text.indexOf(',') : -1;
  return new Uint8Array(Buffer.from(text.slice(comma + 1), 'base64'));
}

/** A `data:` URL's bytes and declared type; undefined if it is not a base64 data URL. */
export function decodeDataUrl(url: string): { data: Uint8Array; mimeType: string | undefined } | undefined {
  const match = /^data:([^,;]*)((?:;[^,;]*)*),/i.exec(url);
  if (match === null || !/;base64$/i.test(match[2] ?? '')) return undefined;
  return { data: fromBase64(url), mimeType: match[1] === '' ? undefined : match[1] };
}

/**
 * The bytes behind an output: a `data:` URL decoded, an http(s) URL downloaded through the
 * engine's agent and timeouts (and without its credentials when on another host).
 */
export async function fetchOutput(
  http: ImageHttp,
  url: string,
  signal: AbortSignal,
  maxBytes?: number,
): Promise<{ data: Uint8Array; mimeType: string | undefined }> {
  if (url.startsWith('data:')) {
    const decoded = decodeDataUrl(url);
    if (decoded === undefined) throw http.client.error(`An output is a data: URL that is not base64 (${url.slice(0, 40)}…).`, { retryable: false });
    return decoded;
  }
  if (!/^https?:\/\//i.test(url)) throw http.client.error(`An output is not a URL: ${url.slice(0, 80)}`, { retryable: false });
  const answer = await http.exchange(maxBytes === undefined ? { target: url, signal } : { target: url, signal, maxBytes });
  if (!isSuccess(answer)) {
    const failure = http.failure(answer);
    // File URLs expire (Replicate's after about an hour); waiting will not bring them back.
    const expired = answer.status === 404 || answer.status === 403 || answer.status === 410;
    throw http.client.error(`Output file ${url.split('?')[0]} could not be downloaded${expired ? ' (expired or removed)' : ''}: ${failure.upstream}`, {
      status: answer.status,
      // A missing file is not a set-up fault of the engine, whatever its status says.
      code: 'ENGINE_FAILED',
      retryable: !expired && failure.retryable,
    });
  }
  const type = answer.headers['content-type'];
  return { data: new Uint8Array(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength), mimeType: typeof type === 'string' ? type : undefined };
}

/** Every image file of a Cog-style output (URLs or `data:` URLs), downloaded and typed. */
export async function outputImages(http: ImageHttp, output: unknown, signal: AbortSignal, origin: string): Promise<EngineFile[]> {
  const urls = outputUrls(output);
  return Promise.all(
    urls.map(async (url, index) => {
      const file = await fetchOutput(http, url, signal);
      return imageFile(http, file.data, file.mimeType, `${origin} output ${index + 1}`);
    }),
  );
}
