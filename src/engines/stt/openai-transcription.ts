/**
 * A `Transcriber` over OpenAI's `POST {base}/audio/transcriptions`, which other servers speak
 * too: speaches (formerly faster-whisper-server), LocalAI and whisper.cpp's `whisper-server`
 * (started with `--inference-path /v1/audio/transcriptions`). Providers are data: a base URL,
 * an optional key, a model.
 *
 * The request is multipart/form-data (`file`, `model`, `response_format`, optional `language`
 * and `prompt`). `json` answers `{text}` and every server and model speaks it; `verbose_json`
 * adds `language` and `duration` but OpenAI's gpt-4o models refuse it, so it is opt-in.
 */
import { Blob } from 'node:buffer';
import { FormData, type Dispatcher } from 'undici';
import { z } from 'zod';
import { EngineError, type EngineErrorCode } from '../../core/errors.js';
import type { CallOptions, Transcriber, Transcription, TranscriptionRequest } from '../../core/ports.js';
import { OPENAI_COMPATIBLE_PROVIDER, createOpenAICompatibleClient } from '../chat/openai-wire.js';
import { truncate, type EngineClient, type EngineResponse, type EngineTimeouts } from '../http.js';
import { languageCode } from './languages.js';

export type OpenAITranscriptionFormat = 'json' | 'verbose_json';

export interface OpenAITranscriptionOptions extends EngineTimeouts {
  /** Up to and including the API version, e.g. `https://api.openai.com/v1` or `http://127.0.0.1:8000/v1`. */
  baseURL: string;
  /** Sent as `Authorization: Bearer`; local servers usually need none. */
  apiKey?: string;
  /** Default `whisper-1`; speaches takes e.g. `Systran/faster-whisper-small`. */
  model?: string;
  /** Default `json`; `verbose_json` also reports the language and duration. */
  responseFormat?: OpenAITranscriptionFormat;
  /** Words the speech is likely to hold (names of characters), passed as `prompt`. */
  prompt?: string;
  /**
   * Appended to the base URL; default `/audio/transcriptions`. whisper.cpp's `whisper-server`
   * serves the same fields at `/inference` (base URL without `/v1`) unless started with
   * `--inference-path /v1/audio/transcriptions`.
   */
  path?: string;
  /** Default 25 MiB, OpenAI's limit; larger files are refused before any byte is sent. */
  maxAudioBytes?: number;
  /** Largest answer read, default 1 MiB: a transcript of 25 MB of audio is far smaller. */
  maxAnswerBytes?: number;
  dispatcher?: Dispatcher;
}

export interface OpenAITranscriber extends Transcriber {
  close(): Promise<void>;
}

export const OPENAI_TRANSCRIPTION_PROVIDER = OPENAI_COMPATIBLE_PROVIDER;
export const DEFAULT_MAX_AUDIO_BYTES = 25 * 1024 * 1024;
const DEFAULT_MAX_ANSWER_BYTES = 1024 * 1024;
const LABEL = 'Transcription engine';

/** `json` is `{text}`; servers add `usage`, `logprobs` or `segments`, which we do not read. */
const answerSchema = z.object({
  text: z.string(),
  language: z.string().optional(),
  duration: z.union([z.number(), z.string()]).optional(),
});

export function createOpenAITranscriber(options: OpenAITranscriptionOptions): OpenAITranscriber {
  const client = createOpenAICompatibleClient(LABEL, { ...options, maxJsonBytes: options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES }, 'transcription');
  const maxAudioBytes = options.maxAudioBytes ?? DEFAULT_MAX_AUDIO_BYTES;
  const responseFormat = options.responseFormat ?? 'json';
  const path = options.path ?? '/audio/transcriptions';

  return {
    provider: OPENAI_TRANSCRIPTION_PROVIDER,
    maxAudioBytes,

    async transcribe(request: TranscriptionRequest, callOptions: CallOptions = {}): Promise<Transcription> {
      const { signal } = callOptions;
      checkRequest(client, request, maxAudioBytes);
      const form = new FormData();
      form.append('file', new Blob([request.audio], { type: request.mimeType }), request.filename);
      form.append('model', options.model ?? 'whisper-1');
      form.append('response_format', responseFormat);
      if (request.language !== undefined) form.append('language', request.language);
      if (options.prompt !== undefined) form.append('prompt', options.prompt);
      // undici writes the multipart body and its boundary header itself.
      let response: EngineResponse;
      try {
        response = await client.send({ path, body: form, headers: { accept: 'application/json' }, signal });
      } catch (thrown) {
        throw refusalInOurWords(client, thrown);
      }
      return transcriptionOf(client, await client.readJson(response, signal), response.statusCode);
    },

    close: () => client.close(),
  };
}

/** Refusals that need no round trip; the person is told what to change. */
function checkRequest(client: EngineClient, request: TranscriptionRequest, maxAudioBytes: number): void {
  if (request.audio.byteLength === 0) {
    throw client.error('The audio to transcribe is empty.', { status: 400, retryable: false, publicMessage: 'The audio file is empty, so there is nothing to write down.' });
  }
  if (request.audio.byteLength > maxAudioBytes) {
    throw client.error(`The audio is ${request.audio.byteLength} bytes, over the engine's ${maxAudioBytes}.`, {
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
      retryable: false,
      publicMessage: `The audio is too large to transcribe (at most ${Math.floor(maxAudioBytes / (1024 * 1024))} MB). Send a shorter recording.`,
    });
  }
}

/**
 * The shared message for a 4xx speaks of rephrasing and images. For audio the person can do
 * something else, so the refusals a file causes get their own words; other refusals (a
 * parameter the server does not take) are the operator's to fix. The engine's words stay in `upstream`.
 */
function refusalInOurWords(client: EngineClient, thrown: unknown): unknown {
  if (!(thrown instanceof EngineError) || thrown.status === undefined) return thrown;
  const refusal = refusalOf(thrown.status, thrown.upstream);
  if (refusal === undefined) return thrown;
  return client.error(thrown.upstream, { status: thrown.status, retryable: false, ...refusal, cause: thrown });
}

/**
 * What OpenAI, speaches, LocalAI and whisper.cpp say when the file itself is the trouble. A bare
 * "format" is not enough: a refused `response_format` is the operator's to fix.
 */
const ABOUT_THE_FILE = /\bfile\b|audio|decod|corrupt|ffmpeg|unsupported (?:media )?format|invalid (?:media|data)/i;

/** The refusal in our words, with the code an API client acts on: the recording's fault (413, 415) or ours (502). */
function refusalOf(status: number, upstream: string): { publicMessage: string; code: EngineErrorCode } | undefined {
  if (status === 413) return { code: 'PAYLOAD_TOO_LARGE', publicMessage: 'The audio is too large for the transcription engine. Send a shorter recording.' };
  if (status !== 400 && status !== 415 && status !== 422) return undefined;
  return ABOUT_THE_FILE.test(upstream)
    ? { code: 'UNSUPPORTED_MEDIA_TYPE', publicMessage: 'The transcription engine could not read this audio. Send it as Ogg, MP3, WAV, M4A or WebM; if it keeps failing, tell the operator.' }
    : { code: 'ENGINE_FAILED', publicMessage: 'The transcription engine refused our request; nothing in your recording is at fault. If it keeps happening, tell the operator.' };
}

function transcriptionOf(client: EngineClient, body: unknown, status: number): Transcription {
  const parsed = answerSchema.safeParse(body);
  if (!parsed.success) {
    throw client.error(`${LABEL} answered JSON without a text: ${truncate(JSON.stringify(body))}`, { status, retryable: false });
  }
  const transcription: Transcription = { text: parsed.data.text.trim() };
  const language = parsed.data.language === undefined ? undefined : languageCode(parsed.data.language);
  if (language !== undefined) transcription.language = language;
  // whisper.cpp has sent the duration as a string in some versions.
  const duration = Number(parsed.data.duration);
  if (parsed.data.duration !== undefined && Number.isFinite(duration) && duration >= 0) transcription.durationSeconds = duration;
  return transcription;
}
