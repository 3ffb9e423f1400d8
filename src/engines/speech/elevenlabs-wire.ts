/**
 * The ElevenLabs wire format: request bodies, the voice list, and the multipart body of
 * instant voice cloning. Readers take `unknown` and trust no field.
 */
import type { SpeechVoice, VoiceSample } from '../../core/ports.js';

/** Raw 16-bit mono PCM formats; `pcm_44100` and up need a Pro subscription. */
export type ElevenLabsPcmFormat = 'pcm_16000' | 'pcm_22050' | 'pcm_24000' | 'pcm_44100' | 'pcm_48000';

/** `voice_settings`, in our naming; each is sent only when set. */
export interface ElevenLabsVoiceSettings {
  /** 0..1: higher is steadier, lower more expressive. */
  stability?: number;
  /** 0..1: how closely to keep to the original voice. */
  similarityBoost?: number;
  /** 0..1: style exaggeration (costs latency). */
  style?: number;
  useSpeakerBoost?: boolean;
  /** 0.7..1.2; 1 is normal. */
  speed?: number;
}

export function sampleRateOf(format: ElevenLabsPcmFormat): number {
  return Number(format.slice('pcm_'.length));
}

export function toWireSettings(settings: ElevenLabsVoiceSettings): Record<string, number | boolean> {
  const wire: Record<string, number | boolean> = {};
  if (settings.stability !== undefined) wire['stability'] = settings.stability;
  if (settings.similarityBoost !== undefined) wire['similarity_boost'] = settings.similarityBoost;
  if (settings.style !== undefined) wire['style'] = settings.style;
  if (settings.useSpeakerBoost !== undefined) wire['use_speaker_boost'] = settings.useSpeakerBoost;
  if (settings.speed !== undefined) wire['speed'] = settings.speed;
  return wire;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The voices of a `GET /v1/voices` answer, skipping entries without an id. */
export function voicesOf(body: unknown): SpeechVoice[] {
  const voices = isRecord(body) && Array.isArray(body['voices']) ? body['voices'] : [];
  const result: SpeechVoice[] = [];
  for (const entry of voices) {
    if (!isRecord(entry)) continue;
    const id = text(entry['voice_id']);
    if (id === undefined) continue;
    const voice: SpeechVoice = { id, name: text(entry['name']) ?? id };
    const language = languageOf(entry);
    if (language !== undefined) voice.language = language;
    const labels = isRecord(entry['labels']) ? Object.values(entry['labels']).filter((value): value is string => typeof value === 'string') : [];
    const description = text(entry['description']) ?? (labels.length > 0 ? labels.join(', ') : undefined);
    if (description !== undefined) voice.description = description;
    result.push(voice);
  }
  return result;
}

/** The first verified language's locale (`en-US`) or language (`en`), else a `language` label. */
function languageOf(entry: Record<string, unknown>): string | undefined {
  const verified = Array.isArray(entry['verified_languages']) ? entry['verified_languages'][0] : undefined;
  if (isRecord(verified)) return text(verified['locale']) ?? text(verified['language']);
  return isRecord(entry['labels']) ? text(entry['labels']['language']) : undefined;
}

/**
 * The multipart body of `POST /v1/voices/add`: `name`, one `files` part per sample (with its
 * filename and content type), then the optional `description` and `labels` (a JSON string).
 * The platform's `Response` writes the boundary and the part headers.
 */
export async function cloneForm(
  name: string,
  samples: readonly VoiceSample[],
  extra: { description?: string | undefined; labels?: Record<string, string> | undefined },
): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  form.append('name', name);
  for (const sample of samples) form.append('files', new Blob([new Uint8Array(sample.data)], { type: sample.mimeType }), sample.filename);
  if (extra.description !== undefined) form.append('description', extra.description);
  if (extra.labels !== undefined) form.append('labels', JSON.stringify(extra.labels));
  const encoded = new Response(form);
  return { body: Buffer.from(await encoded.arrayBuffer()), contentType: encoded.headers.get('content-type') ?? 'multipart/form-data' };
}

/** `{voice_id, requires_verification}` of a clone answer. */
export function clonedVoiceOf(body: unknown): { voiceId: string; requiresVerification: boolean } | undefined {
  if (!isRecord(body)) return undefined;
  const voiceId = text(body['voice_id']);
  return voiceId === undefined ? undefined : { voiceId, requiresVerification: body['requires_verification'] === true };
}
