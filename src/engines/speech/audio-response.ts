/**
 * Reading audio answers of HTTP speech engines: whole, or as PCM pieces while they arrive.
 * Transport failures mid-body become `EngineError`s through the engine's client.
 */
import { EngineError, ValidationError } from '../../core/errors.js';
import type { PcmAudio } from '../../core/ports.js';
import { pcmFromBytes } from '../../audio/pcm.js';
import { type EngineClient, type EngineResponse, upstreamMessage } from '../http.js';

/**
 * Refuses a 2xx answer that is not audio (a JSON error or an HTML page from a proxy), which
 * would otherwise be played as noise.
 */
async function checkAudio(client: EngineClient, label: string, response: EngineResponse, signal: AbortSignal | undefined): Promise<void> {
  const type = String(response.headers['content-type'] ?? '');
  if (!/json|text\/html/i.test(type)) return;
  let text: string;
  try {
    text = await response.body.text();
  } catch (thrown) {
    throw client.translate(thrown, signal);
  }
  throw client.error(`${label} answered ${type} instead of audio: ${upstreamMessage(text)}`, { status: response.statusCode, retryable: false });
}

/** The whole audio answer. */
export async function readAudio(client: EngineClient, label: string, response: EngineResponse, signal: AbortSignal | undefined): Promise<Buffer> {
  await checkAudio(client, label, response, signal);
  try {
    return Buffer.from(await response.body.arrayBuffer());
  } catch (thrown) {
    throw client.translate(thrown, signal);
  }
}

/**
 * Raw s16le mono PCM as it arrives, each piece whole samples: a byte split from its pair is
 * kept for the next piece.
 */
export async function* pcmPieces(
  client: EngineClient,
  label: string,
  response: EngineResponse,
  sampleRate: number,
  signal: AbortSignal | undefined,
): AsyncGenerator<PcmAudio, void, undefined> {
  await checkAudio(client, label, response, signal);
  const chunks = response.body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let carried: Buffer | undefined;
  let finished = false;
  try {
    for (;;) {
      let next: IteratorResult<Buffer>;
      try {
        next = await chunks.next();
      } catch (thrown) {
        throw client.translate(thrown, signal);
      }
      if (next.done === true) break;
      const bytes: Buffer = carried === undefined ? next.value : Buffer.concat([carried, next.value]);
      const whole = bytes.length - (bytes.length % 2);
      carried = whole < bytes.length ? bytes.subarray(whole) : undefined;
      if (whole > 0) yield pcmFromBytes(bytes.subarray(0, whole), sampleRate);
      signal?.throwIfAborted();
    }
    finished = true;
  } finally {
    // Stopping early (a break, an abort, a failure) must release the socket now.
    if (!finished) response.body.destroy();
  }
}

/**
 * An engine's refusal of a voice as the port's `VALIDATION_FAILED` naming it; other errors
 * unchanged. Engines answer 404 (voice in the path) or 400/422 (voice in the body) with a
 * message about the voice; a bare 404 is more likely a wrong base URL and stays an engine error.
 */
export function unknownVoiceAsValidation(thrown: unknown, voiceId: string, engineName: string): unknown {
  if (!(thrown instanceof EngineError) || thrown.status === undefined) return thrown;
  const aboutVoice = /voice/i.test(thrown.upstream) && /not found|not exist|unknown|invalid value/i.test(thrown.upstream);
  if ([400, 404, 422].includes(thrown.status) && aboutVoice) {
    // The engine's own words stay in the log: only the caller's voice id is repeated.
    return ValidationError.field('voiceId', `${engineName} has no voice "${voiceId}".`);
  }
  return thrown;
}
