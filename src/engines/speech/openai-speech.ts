/**
 * A `SpeechEngine` over OpenAI's `POST {base}/audio/speech`, which other servers speak too:
 * Kokoro-FastAPI (port 8880, voices such as `af_heart`), openedai-speech (Piper, XTTS) and
 * LocalAI. Providers are data: a base URL, an optional key, a model, a response format.
 *
 * `pcm` (OpenAI: 24 kHz signed 16-bit mono, no header) needs no decoding and streams; servers
 * that only answer `mp3` or `wav` (LocalAI) are decoded, and streamed sentence by sentence.
 */
import type { Dispatcher } from 'undici';
import type { CallOptions, PcmAudio, SpeechEngine, SpeechVoice } from '../../core/ports.js';
import { decodeMp3 } from '../../audio/mp3.js';
import { pcmFromBytes } from '../../audio/pcm.js';
import { decodeWav } from '../../audio/wav.js';
import { OPENAI_COMPATIBLE_PROVIDER, createOpenAICompatibleClient } from '../chat/openai-wire.js';
import type { EngineClient, EngineResponse, EngineTimeouts } from '../http.js';
import { pcmPieces, readAudio, unknownVoiceAsValidation } from './audio-response.js';
import { OPENAI_VOICES, VoiceList, voiceFromId, voicesOf } from './openai-speech-voices.js';
import { checkSpeechText, splitSentences } from './speech-text.js';

export const OPENAI_SPEECH_PROVIDER = OPENAI_COMPATIBLE_PROVIDER;
export { OPENAI_VOICES };

export type OpenAISpeechFormat = 'pcm' | 'mp3' | 'wav';

export interface OpenAISpeechOptions extends EngineTimeouts {
  /** Up to and including the API version, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8880/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer`; local servers usually need none. */
  apiKey?: string;
  /** Default `tts-1`; Kokoro-FastAPI takes `kokoro`, LocalAI its model name. */
  model?: string;
  /** Default `pcm`. */
  responseFormat?: OpenAISpeechFormat;
  /** The rate of `pcm` answers, which carry no header; default 24 000 (OpenAI, Kokoro). */
  pcmSampleRate?: number;
  /** 0.25 to 4; the server's default (1) when absent. */
  speed?: number;
  /** How to speak, for models that take it (gpt-4o-mini-tts). */
  instructions?: string;
  /** The voices offered when the server lists none; default OpenAI's. */
  voices?: ReadonlyArray<string | SpeechVoice>;
  /** Ask `GET {base}/audio/voices` for the server's own list; default true. */
  discoverVoices?: boolean;
  /** How long a voice list is kept; default 10 minutes. */
  voiceListTtlMs?: number;
  /** Default 4096 characters, OpenAI's limit. */
  maxTextLength?: number;
  dispatcher?: Dispatcher;
}

/** The OpenAI-style engine; `close()` releases its connections. */
export interface OpenAISpeechEngine extends SpeechEngine {
  close(): Promise<void>;
}

const LABEL = 'Speech engine';
/** A server without a voice list should not hold up listing voices for long. */
const DISCOVERY_TIMEOUT_MS = 5_000;

export function createOpenAISpeechEngine(options: OpenAISpeechOptions): OpenAISpeechEngine {
  const client = createOpenAICompatibleClient(LABEL, options, 'speech');
  const format = options.responseFormat ?? 'pcm';
  const pcmSampleRate = options.pcmSampleRate ?? 24_000;
  const maxTextLength = options.maxTextLength ?? 4096;
  const voices = new VoiceList({
    configured: (options.voices ?? OPENAI_VOICES).map((voice) => (typeof voice === 'string' ? voiceFromId(voice) : voice)),
    discover: options.discoverVoices === false ? undefined : () => discoverVoices(client),
    ttlMs: options.voiceListTtlMs ?? 10 * 60_000,
  });

  const requestSpeech = async (input: string, voiceId: string, signal: AbortSignal | undefined): Promise<EngineResponse> => {
    await voices.check(voiceId, signal);
    const body: Record<string, unknown> = { model: options.model ?? 'tts-1', voice: voiceId, input, response_format: format };
    if (options.speed !== undefined) body['speed'] = options.speed;
    if (options.instructions !== undefined) body['instructions'] = options.instructions;
    try {
      return await client.send({ path: '/audio/speech', body: JSON.stringify(body), headers: { 'content-type': 'application/json' }, signal });
    } catch (thrown) {
      throw unknownVoiceAsValidation(thrown, voiceId, LABEL);
    }
  };

  const speakWhole = async (input: string, voiceId: string, signal: AbortSignal | undefined): Promise<PcmAudio> => {
    const bytes = await readAudio(client, LABEL, await requestSpeech(input, voiceId, signal), signal);
    if (format === 'pcm') return pcmFromBytes(bytes, pcmSampleRate);
    try {
      return format === 'mp3' ? await decodeMp3(bytes) : decodeWav(bytes);
    } catch (cause) {
      const reason = cause instanceof Error ? cause.message : String(cause);
      throw client.error(`${LABEL} answered audio that is not ${format}: ${reason}`, { retryable: false, cause });
    }
  };

  return {
    provider: OPENAI_SPEECH_PROVIDER,
    maxTextLength,

    listVoices: (callOptions: CallOptions = {}) => voices.list(callOptions.signal),

    // Async, so that a refused text is a rejection like every other failure.
    synthesize: async (request, callOptions: CallOptions = {}) => speakWhole(checkSpeechText(request.text, maxTextLength), request.voiceId, callOptions.signal),

    async *stream(request, callOptions: CallOptions = {}): AsyncGenerator<PcmAudio, void, undefined> {
      const text = checkSpeechText(request.text, maxTextLength);
      const { signal } = callOptions;
      if (format === 'pcm') {
        yield* pcmPieces(client, LABEL, await requestSpeech(text, request.voiceId, signal), pcmSampleRate, signal);
        return;
      }
      // A compressed answer cannot be cut at any byte: ask sentence by sentence instead.
      for (const sentence of splitSentences(text)) yield await speakWhole(sentence, request.voiceId, signal);
    },

    close: () => client.close(),
  };
}

/**
 * The server's list, or undefined when it has none (OpenAI answers 404) or fails to answer.
 * It has its own short timeout and no caller's signal, as callers share one discovery.
 */
async function discoverVoices(client: EngineClient): Promise<SpeechVoice[] | undefined> {
  const signal = AbortSignal.timeout(DISCOVERY_TIMEOUT_MS);
  try {
    const response = await client.send({ method: 'GET', path: '/audio/voices', headers: { accept: 'application/json' }, signal });
    return voicesOf(await client.readJson(response, signal));
  } catch {
    return undefined;
  }
}
