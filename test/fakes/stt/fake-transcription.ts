/**
 * A fake OpenAI-compatible transcription server on 127.0.0.1: `POST /v1/audio/transcriptions`
 * (and whisper.cpp's `POST /inference`) reading the real multipart wire, recording each
 * request's fields, and answering as the servers do: `json` `{text}`, `verbose_json` (OpenAI
 * names the language, `english`; speaches sends the code, `en`), `text` as plain text; and
 * OpenAI's error bodies `{error:{message,type,param,code}}` for a bad key (401), a missing
 * file, an unknown extension or bytes that are not audio (400) and a body past the size limit (413).
 *
 * What it "hears" is scripted: `script.text`, or `transcripts` keyed by the file's bytes.
 */
import type { ServerResponse } from 'node:http';
import { type Loopback, type LoopbackRequest, listenOnLoopback, sendJson } from '../loopback-http.js';

export interface FakeTranscriptionOptions {
  /** When set, requests without `Authorization: Bearer <apiKey>` get OpenAI's 401. */
  apiKey?: string;
  /** `openai` names the language in `verbose_json` (`english`); `speaches` sends its code (`en`). */
  flavor?: 'openai' | 'speaches';
  /** Largest request body, default OpenAI's 25 MiB (26 214 400 bytes). */
  maxBodyBytes?: number;
}

/** One transcription request as the server read it off the wire. */
export interface RecordedTranscription {
  fields: Record<string, string>;
  file?: { name: string; type: string; bytes: Buffer };
  contentType: string;
}

export interface TranscriptionScript {
  /** What the fake hears; default `Hello there.` */
  text?: string;
  /**
   * What the fake hears in this file, when it depends on the audio (who is speaking in a call,
   * told apart by pitch); overrides `text`. Throwing answers 500.
   */
  hear?: (file: Buffer, fields: Record<string, string>) => string;
  /** ISO 639-1 code of what it hears; default the request's `language`, else `en`. */
  language?: string;
  /** Seconds reported in `verbose_json`; default 1.5. */
  duration?: number;
  /** Answer this status with OpenAI's error body (and `message` when given) instead. */
  failWith?: { status: number; message?: string };
  /** Wait this long before answering headers (to prove the adapter's timeout). */
  delayMs?: number;
  /** Add this many bytes of padding segments to the answer (to prove the answer bound). */
  paddingBytes?: number;
  /** Answer 200 with this raw body and content type (a proxy's page, a malformed server). */
  rawAnswer?: { body: string; contentType: string };
}

export interface FakeTranscription {
  /** Ends in `/v1`, like a real server's OpenAI base URL. */
  readonly apiURL: string;
  readonly loopback: Loopback;
  readonly transcriptions: RecordedTranscription[];
  script: TranscriptionScript;
  close(): Promise<void>;
}

/** OpenAI's list, as its 400 names it. */
export const SUPPORTED_EXTENSIONS = ['flac', 'm4a', 'mp3', 'mp4', 'mpeg', 'mpga', 'oga', 'ogg', 'wav', 'webm'];
const RESPONSE_FORMATS = ['json', 'text', 'srt', 'verbose_json', 'vtt'];
const LANGUAGE_NAMES: Record<string, string> = { en: 'english', fr: 'french', de: 'german', es: 'spanish', ja: 'japanese' };
export const DEFAULT_MAX_BODY_BYTES = 26_214_400;

function openAIError(response: ServerResponse, status: number, message: string, type = 'invalid_request_error', code: string | null = null, param: string | null = null): void {
  sendJson(response, status, { error: { message, type, param, code } });
}

export async function startFakeTranscription(options: FakeTranscriptionOptions = {}): Promise<FakeTranscription> {
  const flavor = options.flavor ?? 'openai';
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const transcriptions: RecordedTranscription[] = [];
  const fake = { script: {} as TranscriptionScript };

  const handle = async (request: LoopbackRequest, response: ServerResponse): Promise<void> => {
    const { script } = fake;
    if (script.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, script.delayMs));
    if (request.method !== 'POST' || (request.path !== '/v1/audio/transcriptions' && request.path !== '/inference')) {
      openAIError(response, 404, `Invalid URL (${request.method} ${request.path})`);
      return;
    }
    if (options.apiKey !== undefined && request.headers.authorization !== `Bearer ${options.apiKey}`) {
      const given = (request.headers.authorization ?? '').replace(/^Bearer /, '');
      openAIError(response, 401, `Incorrect API key provided: ${given}. You can find your API key at https://platform.openai.com/account/api-keys.`, 'invalid_request_error', 'invalid_api_key');
      return;
    }
    // OpenAI's edge counts the body before any parsing.
    if (request.body.length > maxBodyBytes) {
      openAIError(response, 413, `Maximum content size limit (${maxBodyBytes}) exceeded (${request.body.length} bytes read)`, 'server_error');
      return;
    }
    const contentType = request.headers['content-type'] ?? '';
    if (request.form === undefined) {
      openAIError(response, 400, "Could not parse multipart form: expected 'multipart/form-data'.");
      return;
    }
    const recorded: RecordedTranscription = { fields: {}, contentType };
    for (const [name, value] of request.form.entries()) {
      if (typeof value === 'string') recorded.fields[name] = value;
      else if (name === 'file') recorded.file = { name: value.name, type: value.type, bytes: Buffer.from(await value.arrayBuffer()) };
    }
    transcriptions.push(recorded);
    if (script.failWith !== undefined) {
      const { status, message } = script.failWith;
      openAIError(response, status, message ?? 'The server had an error while processing your request. Sorry about that!', status >= 500 ? 'server_error' : 'invalid_request_error');
      return;
    }
    if (recorded.file === undefined) {
      openAIError(response, 400, '1 validation error for Request\nbody -> file\n  field required (type=value_error.missing)');
      return;
    }
    if (recorded.fields['model'] === undefined) {
      openAIError(response, 400, "you must provide a model parameter", 'invalid_request_error', null, 'model');
      return;
    }
    const extension = /\.([a-z0-9]+)$/i.exec(recorded.file.name)?.[1]?.toLowerCase() ?? '';
    if (!SUPPORTED_EXTENSIONS.includes(extension)) {
      openAIError(response, 400, `Invalid file format. Supported formats: ['${SUPPORTED_EXTENSIONS.join("', '")}']`, 'invalid_request_error', null, 'file');
      return;
    }
    // Real servers hand the file to ffmpeg; what does not start like audio fails there.
    if (!looksLikeAudio(recorded.file.bytes)) {
      openAIError(response, 400, 'Audio file might be corrupted or unsupported', 'invalid_request_error', 'invalid_value', 'file');
      return;
    }
    const format = recorded.fields['response_format'] ?? 'json';
    if (!RESPONSE_FORMATS.includes(format)) {
      openAIError(response, 400, `'${format}' is not one of ['json', 'text', 'srt', 'verbose_json', 'vtt'] - 'response_format'`, 'invalid_request_error', null, 'response_format');
      return;
    }
    if (script.rawAnswer !== undefined) {
      response.writeHead(200, { 'content-type': script.rawAnswer.contentType });
      response.end(script.rawAnswer.body);
      return;
    }
    let heard = script;
    if (script.hear !== undefined) {
      try {
        heard = { ...script, text: script.hear(recorded.file.bytes, recorded.fields) };
      } catch (error) {
        openAIError(response, 500, error instanceof Error ? error.message : 'hear failed', 'server_error');
        return;
      }
    }
    answer(response, format, heard, recorded.fields['language'], flavor);
  };

  const loopback = await listenOnLoopback(handle);
  return {
    apiURL: `${loopback.url}/v1`,
    loopback,
    transcriptions,
    get script() {
      return fake.script;
    },
    set script(value: TranscriptionScript) {
      fake.script = value;
    },
    close: () => loopback.close(),
  };
}

/** The containers ffmpeg recognises by their first bytes, written out here so the fake does not lean on the code it tests. */
function looksLikeAudio(bytes: Buffer): boolean {
  const start = bytes.toString('latin1', 0, 12);
  return (
    start.startsWith('OggS') ||
    start.startsWith('fLaC') ||
    start.startsWith('ID3') ||
    (start.startsWith('RIFF') && start.slice(8) === 'WAVE') ||
    start.slice(4, 8) === 'ftyp' ||
    (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x1a45dfa3) ||
    (bytes.length >= 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)
  );
}

function answer(response: ServerResponse, format: string, script: TranscriptionScript, requestedLanguage: string | undefined, flavor: 'openai' | 'speaches'): void {
  const text = script.text ?? 'Hello there.';
  const duration = script.duration ?? 1.5;
  const code = script.language ?? requestedLanguage ?? 'en';
  if (format === 'text') {
    response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    response.end(`${text}\n`);
    return;
  }
  const padding = 'x'.repeat(script.paddingBytes ?? 0);
  if (format === 'json') {
    sendJson(response, 200, padding === '' ? { text } : { text, padding });
    return;
  }
  const segment = { id: 0, seek: 0, start: 0, end: duration, text: ` ${text}`, tokens: [50364, 2425, 456, 13, 50439], temperature: 0, avg_logprob: -0.25, compression_ratio: 0.8, no_speech_prob: 0.01 };
  sendJson(response, 200, {
    task: 'transcribe',
    language: flavor === 'openai' ? (LANGUAGE_NAMES[code] ?? code) : code,
    duration,
    text,
    segments: padding === '' ? [segment] : [segment, { ...segment, id: 1, text: padding }],
  });
}
