/**
 * A `SpeechEngine` over the ElevenLabs API: text to speech (whole or streamed), its voice
 * list, instant voice cloning from samples, and deleting a cloned voice.
 *
 * Audio is asked for as raw PCM, `pcm_24000` by default: no decoder is needed, every
 * subscription may use it (`pcm_44100` and up need Pro), it carries all of speech (to 12 kHz),
 * it is half the bytes of 48 kHz, and going to Discord's 48 kHz is an exact doubling.
 */
import type { Dispatcher } from 'undici';
import { EngineError, ValidationError } from '../../core/errors.js';
import type { CallOptions, PcmAudio, SpeechEngine, SpeechVoice, VoiceSample } from '../../core/ports.js';
import { concatPcm } from '../../audio/pcm.js';
import { createEngineClient, type EngineResponse, type EngineTimeouts } from '../http.js';
import { pcmPieces, unknownVoiceAsValidation } from './audio-response.js';
import {
  type ElevenLabsPcmFormat,
  type ElevenLabsVoiceSettings,
  cloneForm,
  clonedVoiceOf,
  sampleRateOf,
  toWireSettings,
  voicesOf,
} from './elevenlabs-wire.js';
import { checkSpeechText } from './speech-text.js';

export const ELEVENLABS_PROVIDER = 'elevenlabs';
export type { ElevenLabsPcmFormat, ElevenLabsVoiceSettings };

export interface ElevenLabsSpeechOptions extends EngineTimeouts {
  /** Default `https://api.elevenlabs.io`. */
  baseURL?: string;
  /** Sent as `xi-api-key`. */
  apiKey: string;
  /** Default `eleven_multilingual_v2`. */
  model?: string;
  /** Default `pcm_24000` (see above). */
  outputFormat?: ElevenLabsPcmFormat;
  /** Default stability 0.5 and similarity boost 0.75, ElevenLabs' own defaults. */
  voiceSettings?: ElevenLabsVoiceSettings;
  /** Sent with every cloned voice. */
  cloneDescription?: string;
  cloneLabels?: Record<string, string>;
  /** The longest text one call accepts; default 5000 characters (multilingual v2 takes 10 000). */
  maxTextLength?: number;
  dispatcher?: Dispatcher;
}

/** The ElevenLabs engine; it can clone, and `close()` releases its connections. */
export interface ElevenLabsSpeechEngine extends SpeechEngine {
  cloneVoice(request: { name: string; samples: readonly VoiceSample[] }, options?: CallOptions): Promise<SpeechVoice>;
  deleteVoice(voiceId: string, options?: CallOptions): Promise<void>;
  close(): Promise<void>;
}

const LABEL = 'ElevenLabs';
/** ElevenLabs voice ids are short letters and digits; anything else cannot name a voice. */
const VOICE_ID = /^[A-Za-z0-9_-]{1,64}$/;

export function createElevenLabsSpeechEngine(options: ElevenLabsSpeechOptions): ElevenLabsSpeechEngine {
  const client = createEngineClient({
    provider: ELEVENLABS_PROVIDER,
    label: LABEL,
    purpose: 'speech',
    baseURL: options.baseURL ?? 'https://api.elevenlabs.io',
    headers: { 'xi-api-key': options.apiKey },
    dispatcher: options.dispatcher,
    connectTimeoutMs: options.connectTimeoutMs,
    headersTimeoutMs: options.headersTimeoutMs,
    bodyTimeoutMs: options.bodyTimeoutMs,
  });
  const model = options.model ?? 'eleven_multilingual_v2';
  const outputFormat = options.outputFormat ?? 'pcm_24000';
  const sampleRate = sampleRateOf(outputFormat);
  const voiceSettings = toWireSettings(options.voiceSettings ?? { stability: 0.5, similarityBoost: 0.75 });
  const maxTextLength = options.maxTextLength ?? 5000;

  /** Starts speaking `text`; the answer's body is raw PCM. */
  const requestSpeech = async (request: { text: string; voiceId: string }, streamed: boolean, signal: AbortSignal | undefined): Promise<EngineResponse> => {
    const text = checkSpeechText(request.text, maxTextLength);
    if (!VOICE_ID.test(request.voiceId)) throw ValidationError.field('voiceId', `"${request.voiceId}" is not an ElevenLabs voice id`);
    const path = `/v1/text-to-speech/${encodeURIComponent(request.voiceId)}${streamed ? '/stream' : ''}?output_format=${outputFormat}`;
    try {
      return await client.send({
        path,
        body: JSON.stringify({ text, model_id: model, voice_settings: voiceSettings }),
        headers: { 'content-type': 'application/json' },
        signal,
      });
    } catch (thrown) {
      throw unknownVoiceAsValidation(thrown, request.voiceId, LABEL);
    }
  };

  return {
    provider: ELEVENLABS_PROVIDER,
    maxTextLength,

    async listVoices(callOptions: CallOptions = {}): Promise<SpeechVoice[]> {
      const response = await client.send({ method: 'GET', path: '/v1/voices', headers: { accept: 'application/json' }, signal: callOptions.signal });
      return voicesOf(await client.readJson(response, callOptions.signal));
    },

    async synthesize(request, callOptions: CallOptions = {}): Promise<PcmAudio> {
      const response = await requestSpeech(request, false, callOptions.signal);
      const pieces: PcmAudio[] = [];
      for await (const piece of pcmPieces(client, LABEL, response, sampleRate, callOptions.signal)) pieces.push(piece);
      return concatPcm(pieces, sampleRate);
    },

    async *stream(request, callOptions: CallOptions = {}): AsyncGenerator<PcmAudio, void, undefined> {
      const response = await requestSpeech(request, true, callOptions.signal);
      yield* pcmPieces(client, LABEL, response, sampleRate, callOptions.signal);
    },

    async cloneVoice(request, callOptions: CallOptions = {}): Promise<SpeechVoice> {
      const name = request.name.trim();
      if (name === '') throw ValidationError.field('name', 'must not be empty');
      if (request.samples.length === 0) throw ValidationError.field('samples', 'send at least one audio sample');
      const form = await cloneForm(name, request.samples, { description: options.cloneDescription, labels: options.cloneLabels });
      const response = await client.send({
        path: '/v1/voices/add',
        body: form.body,
        headers: { 'content-type': form.contentType, accept: 'application/json' },
        signal: callOptions.signal,
      });
      const cloned = clonedVoiceOf(await client.readJson(response, callOptions.signal));
      if (cloned === undefined) throw client.error(`${LABEL} answered a voice clone without a voice_id.`, { retryable: false });
      const voice: SpeechVoice = { id: cloned.voiceId, name };
      if (cloned.requiresVerification) voice.description = 'ElevenLabs asks for this voice to be verified before it can speak';
      return voice;
    },

    async deleteVoice(voiceId, callOptions: CallOptions = {}): Promise<void> {
      if (!VOICE_ID.test(voiceId)) return;
      try {
        const response = await client.send({ method: 'DELETE', path: `/v1/voices/${encodeURIComponent(voiceId)}`, headers: { accept: 'application/json' }, signal: callOptions.signal });
        await response.body.dump();
      } catch (thrown) {
        // Gone already (deleted in ElevenLabs' own app, say): what was asked for holds.
        if (unknownVoiceAsValidation(thrown, voiceId, LABEL) !== thrown || (thrown instanceof EngineError && thrown.status === 404)) return;
        throw thrown;
      }
    },

    close: () => client.close(),
  };
}
