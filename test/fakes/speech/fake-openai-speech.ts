/**
 * A fake OpenAI-style speech server on 127.0.0.1: `POST /v1/audio/speech` answering PCM
 * (24 kHz s16le), MP3 or WAV as asked, OpenAI's error bodies (`{error:{message, type, param,
 * code}}`), Bearer key checks, and, in the Kokoro flavour, `GET /v1/audio/voices`.
 */
import type { ServerResponse } from 'node:http';
import { encodeMp3 } from '../../../src/audio/mp3.js';
import { pcmToBytes } from '../../../src/audio/pcm.js';
import { encodeWav } from '../../../src/audio/wav.js';
import { type FakeRequest, type FakeServer, sendAudio, sendJson, startFakeServer } from './fake-http.js';
import { FAKE_MS_PER_CHARACTER, chirp } from './tones.js';

export interface FakeOpenAISpeechOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401. */
  apiKey?: string;
  /** `kokoro` lists its voices at `GET /v1/audio/voices` and mixes them (`af_bella+af_sky`). */
  flavor?: 'openai' | 'kokoro';
  voices?: string[];
  /** Formats this server can answer; others get a 400 (LocalAI only writes wav). */
  formats?: string[];
  /** Write WAV headers with unknown sizes, as servers streaming WAV do. */
  streamedWavHeader?: boolean;
}

export interface FakeOpenAISpeech extends FakeServer {
  /** Ends in `/v1`, like a real server's OpenAI base URL. */
  readonly apiURL: string;
}

export const KOKORO_VOICES = ['af_heart', 'af_bella', 'af_sky', 'am_adam', 'bf_emma', 'jf_alpha'];
const OPENAI_DEFAULT_VOICES = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'];

function openAIError(status: number, message: string | undefined, param: string | null = null): unknown {
  const defaults: Record<number, [string, string, string | null]> = {
    401: ['Incorrect API key provided: wrong. You can find your API key at https://platform.openai.com/account/api-keys.', 'invalid_request_error', 'invalid_api_key'],
    422: ['Unprocessable entity', 'invalid_request_error', null],
    429: ['Rate limit reached for requests', 'requests', 'rate_limit_exceeded'],
  };
  const [text, type, code] = defaults[status] ?? ['The server had an error while processing your request.', status >= 500 ? 'server_error' : 'invalid_request_error', null];
  return { error: { message: message ?? text, type, param, code } };
}

/** The fake's speech: a chirp of 60 ms per character, shortened by `speed`. */
function speechFor(input: string, sampleRate: number, speed: number) {
  return chirp({ sampleRate, durationMs: (input.length * FAKE_MS_PER_CHARACTER) / speed, amplitude: 10000 });
}

export async function startFakeOpenAISpeech(options: FakeOpenAISpeechOptions = {}): Promise<FakeOpenAISpeech> {
  const flavor = options.flavor ?? 'openai';
  const voices = options.voices ?? (flavor === 'kokoro' ? KOKORO_VOICES : OPENAI_DEFAULT_VOICES);
  const formats = options.formats ?? ['mp3', 'opus', 'aac', 'flac', 'wav', 'pcm'];

  const handle = async (request: FakeRequest, response: ServerResponse, fake: FakeServer): Promise<void> => {
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      sendJson(response, 401, openAIError(401, undefined));
      return;
    }
    if (request.method === 'GET' && request.path === '/v1/audio/voices' && flavor === 'kokoro') {
      sendJson(response, 200, { voices });
      return;
    }
    if (request.method !== 'POST' || request.path !== '/v1/audio/speech') {
      sendJson(response, 404, openAIError(404, `Invalid URL (${request.method} ${request.path})`));
      return;
    }
    const body = (request.json ?? {}) as { model?: unknown; voice?: unknown; input?: unknown; response_format?: unknown; speed?: unknown };
    const input = typeof body.input === 'string' ? body.input : '';
    const voice = typeof body.voice === 'string' ? body.voice : '';
    const format = typeof body.response_format === 'string' ? body.response_format : 'mp3';
    const speed = typeof body.speed === 'number' ? body.speed : 1;
    const voiceParts = flavor === 'kokoro' ? voice.split('+').map((part) => part.replace(/\(\d+(\.\d+)?\)$/, '')) : [voice];
    if (input === '' || input.length > 4096) {
      sendJson(response, 400, openAIError(400, input === '' ? "Missing required parameter: 'input'." : "'input' is too long: at most 4096 characters.", 'input'));
    } else if (!voiceParts.every((part) => voices.includes(part))) {
      sendJson(response, 400, openAIError(400, `Invalid value for 'voice': '${voice}' is not a known voice. Supported values are: ${voices.join(', ')}.`, 'voice'));
    } else if (!formats.includes(format)) {
      sendJson(response, 400, openAIError(400, `Invalid value for 'response_format': ${format}.`, 'response_format'));
    } else if (format === 'pcm') {
      await sendAudio(response, fake, 'audio/pcm', pcmToBytes(speechFor(input, 24000, speed)), true);
    } else if (format === 'mp3') {
      await sendAudio(response, fake, 'audio/mpeg', encodeMp3(speechFor(input, 24000, speed)), true);
    } else if (format === 'wav') {
      const wav = Buffer.from(encodeWav(speechFor(input, 24000, speed)));
      if (options.streamedWavHeader === true) {
        wav.writeUInt32LE(0xffffffff, 4);
        wav.writeUInt32LE(0xffffffff, 40);
      }
      await sendAudio(response, fake, 'audio/wav', wav, true);
    } else {
      sendJson(response, 400, openAIError(400, `The fake cannot write ${format}.`, 'response_format'));
    }
  };

  const server = await startFakeServer(handle, (status, message) => openAIError(status, message));
  return Object.assign(server, { apiURL: `${server.baseURL}/v1` });
}
