/**
 * A fake ElevenLabs API on 127.0.0.1 speaking its wire format (shared/notes/engines-wire.md):
 * `xi-api-key`, text-to-speech (whole and `/stream`) as raw PCM or MP3 by `output_format`,
 * `GET /v1/voices`, and instant voice cloning by multipart `POST /v1/voices/add`, with the
 * error bodies ElevenLabs sends (`{detail:{status, message}}`, `{detail:"..."}`, FastAPI 422).
 */
import type { ServerResponse } from 'node:http';
import { encodeMp3 } from '../../../src/audio/mp3.js';
import { pcmToBytes } from '../../../src/audio/pcm.js';
import { type FakeRequest, type FakeServer, sendAudio, sendJson, startFakeServer } from './fake-http.js';
import { speechOf } from './tones.js';

export interface FakeElevenLabsVoice {
  voice_id: string;
  name: string;
  category: string;
  description: string | null;
  labels: Record<string, string>;
  verified_languages?: Array<{ language: string; model_id: string; accent: string | null; locale: string | null }>;
}

/** What a clone request carried, as parsed from its multipart body. */
export interface FakeCloneUpload {
  name: string;
  description?: string;
  labels?: Record<string, string>;
  files: Array<{ filename: string; contentType: string; bytes: Buffer }>;
}

export interface FakeElevenLabs extends FakeServer {
  readonly voices: FakeElevenLabsVoice[];
  readonly clones: FakeCloneUpload[];
  /** Voice ids deleted by `DELETE /v1/voices/:id`, in order. */
  readonly deleted: string[];
}

export const FAKE_ELEVENLABS_VOICES: readonly FakeElevenLabsVoice[] = [
  {
    voice_id: '21m00Tcm4TlvDq8ikWAM',
    name: 'Rachel',
    category: 'premade',
    description: null,
    labels: { accent: 'american', age: 'young', gender: 'female', use_case: 'narration' },
    verified_languages: [{ language: 'en', model_id: 'eleven_multilingual_v2', accent: 'american', locale: 'en-US' }],
  },
  { voice_id: 'pNInz6obpgDQGcFmaJgB', name: 'Adam', category: 'premade', description: 'A deep, calm narrator.', labels: { accent: 'american', gender: 'male' } },
];

const STATUS_NAMES: Record<number, string> = { 400: 'invalid_request', 401: 'invalid_api_key', 404: 'not_found', 429: 'too_many_concurrent_requests' };

/** ElevenLabs' error bodies: FastAPI's list for 422, a bare string for 5xx, else status and message. */
function errorBody(status: number, message: string | undefined): unknown {
  if (status === 422) return { detail: [{ loc: ['body', 'text'], msg: message ?? 'Field required', type: 'missing' }] };
  if (status >= 500) return { detail: message ?? 'An internal server error occurred.' };
  const defaults: Record<number, string> = {
    401: 'Invalid API key',
    429: 'Too many concurrent requests for your subscription. Please upgrade or try again later.',
  };
  return { detail: { status: STATUS_NAMES[status] ?? 'error', message: message ?? defaults[status] ?? 'Request failed' } };
}

function detail(response: ServerResponse, status: number, code: string, message: string): void {
  sendJson(response, status, { detail: { status: code, message } });
}

export async function startFakeElevenLabs(options: { apiKey?: string } = {}): Promise<FakeElevenLabs> {
  const voices = FAKE_ELEVENLABS_VOICES.map((voice) => ({ ...voice }));
  const clones: FakeCloneUpload[] = [];
  const deleted: string[] = [];
  let nextClone = 1;

  const handle = async (request: FakeRequest, response: ServerResponse, fake: FakeServer): Promise<void> => {
    const apiKey = options.apiKey ?? 'test-key';
    if (request.headers['xi-api-key'] !== apiKey) {
      detail(response, 401, 'invalid_api_key', 'Invalid API key');
      return;
    }
    const speech = /^\/v1\/text-to-speech\/([^/]+)(\/stream)?$/.exec(request.path);
    if (request.method === 'POST' && speech !== null) {
      await speak(request, response, fake, decodeURIComponent(speech[1] ?? ''), speech[2] !== undefined);
      return;
    }
    if (request.method === 'GET' && request.path === '/v1/voices') {
      sendJson(response, 200, { voices });
      return;
    }
    if (request.method === 'POST' && request.path === '/v1/voices/add') {
      const upload = await readClone(request, response);
      if (upload === undefined) return;
      clones.push(upload);
      const voiceId = `clonedVoice${String(nextClone++).padStart(9, '0')}`;
      voices.push({ voice_id: voiceId, name: upload.name, category: 'cloned', description: upload.description ?? null, labels: upload.labels ?? {} });
      sendJson(response, 200, { voice_id: voiceId, requires_verification: false });
      return;
    }
    const deleting = request.method === 'DELETE' ? /^\/v1\/voices\/([^/]+)$/.exec(request.path) : null;
    if (deleting) {
      // ElevenLabs answers {"status":"ok"}, and 400 voice_does_not_exist for an id it does not hold.
      const index = voices.findIndex((voice) => voice.voice_id === decodeURIComponent(deleting[1]!));
      if (index === -1) {
        sendJson(response, 400, { detail: { status: 'voice_does_not_exist', message: 'A voice with the voice_id does not exist.' } });
        return;
      }
      deleted.push(voices[index]!.voice_id);
      voices.splice(index, 1);
      sendJson(response, 200, { status: 'ok' });
      return;
    }
    sendJson(response, 404, { detail: 'Not Found' });
  };

  const speak = async (request: FakeRequest, response: ServerResponse, fake: FakeServer, voiceId: string, streamed: boolean): Promise<void> => {
    const body = request.json as { text?: unknown; model_id?: unknown } | undefined;
    if (typeof body?.text !== 'string' || body.text.trim() === '') {
      sendJson(response, 422, { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] });
      return;
    }
    if (!voices.some((voice) => voice.voice_id === voiceId)) {
      detail(response, 404, 'voice_not_found', `A voice with the voice_id ${voiceId} was not found.`);
      return;
    }
    const format = request.query.get('output_format') ?? 'mp3_44100_128';
    const pcm = /^pcm_(\d+)$/.exec(format);
    const mp3 = /^mp3_(\d+)_(\d+)$/.exec(format);
    if (pcm !== null) await sendAudio(response, fake, 'audio/pcm', pcmToBytes(speechOf(body.text, Number(pcm[1]))), streamed);
    else if (mp3 !== null) await sendAudio(response, fake, 'audio/mpeg', encodeMp3(speechOf(body.text, Number(mp3[1])), Number(mp3[2])), streamed);
    else detail(response, 400, 'invalid_output_format', `Invalid output format ${format}.`);
  };

  const server = await startFakeServer(handle, errorBody);
  return Object.assign(server, { voices, clones, deleted });
}

/** The clone upload, or undefined after answering as ElevenLabs does to a malformed one. */
async function readClone(request: FakeRequest, response: ServerResponse): Promise<FakeCloneUpload | undefined> {
  const form = request.form;
  if (form === undefined) {
    sendJson(response, 400, { detail: { status: 'invalid_content_type', message: 'Expected multipart/form-data.' } });
    return undefined;
  }
  const name = form.get('name');
  const files = form.getAll('files');
  const description = form.get('description');
  const labels = form.get('labels');
  const problems: string[] = [];
  if (typeof name !== 'string' || name.trim() === '') problems.push('name is required');
  if (files.length === 0) problems.push('at least one file is required');
  for (const file of files) {
    if (!(file instanceof File)) problems.push('every files part must be a file with a filename');
    else if (file.name === '' || file.type === '') problems.push(`file ${file.name || '(unnamed)'} needs a filename and a content type`);
  }
  if (description !== null && typeof description !== 'string') problems.push('description must be text');
  let parsedLabels: Record<string, string> | undefined;
  if (labels !== null) {
    try {
      parsedLabels = JSON.parse(String(labels)) as Record<string, string>;
    } catch {
      problems.push('labels must be a JSON string');
    }
  }
  if (problems.length > 0) {
    sendJson(response, 422, { detail: problems.map((problem) => ({ loc: ['body'], msg: problem, type: 'value_error' })) });
    return undefined;
  }
  const upload: FakeCloneUpload = { name: String(name), files: [] };
  if (typeof description === 'string') upload.description = description;
  if (parsedLabels !== undefined) upload.labels = parsedLabels;
  for (const file of files as File[]) upload.files.push({ filename: file.name, contentType: file.type, bytes: Buffer.from(await file.arrayBuffer()) });
  return upload;
}
