/**
 * The gate for audio people send (a Discord voice message, an audio attachment, `audio/…` chat
 * input over HTTP): refused by what is declared before it is downloaded, then identified by its
 * own bytes and bounded by the duration its header states, before any engine is paid to hear it.
 */
import { AppError } from '../core/errors.js';
import { type AudioFormat, headerDuration, sniffAudioFormat } from './audio-headers.js';

export type { AudioFormat };

export interface AudioInputLimits {
  /** Largest file taken, in bytes. */
  maxBytes: number;
  /** Longest audio taken, in seconds, where the file says how long it is. */
  maxDurationSeconds: number;
}

/** Discord's voice messages are capped by its clients well below this; transcription costs by the minute. */
export const DEFAULT_AUDIO_INPUT_LIMITS: AudioInputLimits = { maxBytes: 25 * 1024 * 1024, maxDurationSeconds: 10 * 60 };

/** What a file was found to be: what to name it for a transcription engine, and how long it is. */
export interface AudioInput {
  format: AudioFormat;
  mimeType: string;
  /** A name whose extension transcription servers recognise, e.g. `voice-message.ogg`. */
  filename: string;
  /** From the header; undefined where the container does not say cheaply (WebM). */
  durationSeconds?: number;
}

/** What the sender declares before any byte is fetched: a Discord attachment's `size`, `content_type`, `duration_secs`. */
export interface DeclaredAudio {
  name: string;
  size: number;
  contentType?: string | null;
  durationSeconds?: number | null;
}

const NAMING: Record<AudioFormat, { mimeType: string; extension: string }> = {
  'ogg-opus': { mimeType: 'audio/ogg', extension: 'ogg' },
  'ogg-vorbis': { mimeType: 'audio/ogg', extension: 'ogg' },
  mp3: { mimeType: 'audio/mpeg', extension: 'mp3' },
  wav: { mimeType: 'audio/wav', extension: 'wav' },
  m4a: { mimeType: 'audio/mp4', extension: 'm4a' },
  webm: { mimeType: 'audio/webm', extension: 'webm' },
  flac: { mimeType: 'audio/flac', extension: 'flac' },
};

const AUDIO_EXTENSIONS = /\.(ogg|oga|opus|mp3|wav|m4a|mp4|webm|flac)$/i;
const TAKEN_FORMATS = 'Ogg, MP3, WAV, M4A, WebM or FLAC';

/**
 * Whether an attachment is audio at all; others are not ours to refuse. The declared type
 * decides; the name only when no type was given (or the generic `application/octet-stream`),
 * since `.mp4` and `.webm` name videos as often as recordings, and a `video/…` file is a video.
 */
export function isDeclaredAudio(declared: Pick<DeclaredAudio, 'name' | 'contentType'>): boolean {
  const type = (declared.contentType ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === '' || type === 'application/octet-stream') return AUDIO_EXTENSIONS.test(declared.name);
  // Some clients label Ogg by its container; Ogg video is rare, and the bytes are read before any engine hears them.
  return type.startsWith('audio/') || type === 'application/ogg';
}

/** Refuses by what is declared, so a file too large or too long is never downloaded. */
export function checkDeclaredAudio(declared: DeclaredAudio, limits: AudioInputLimits = DEFAULT_AUDIO_INPUT_LIMITS): void {
  if (declared.size > limits.maxBytes) throw tooLarge(declared.size, limits);
  if (declared.durationSeconds != null && declared.durationSeconds > limits.maxDurationSeconds) throw tooLong(declared.durationSeconds, limits);
}

/** Identifies downloaded audio by its bytes and bounds it; throws `AppError` for anything else. */
export function inspectAudio(bytes: Uint8Array, limits: AudioInputLimits = DEFAULT_AUDIO_INPUT_LIMITS): AudioInput {
  if (bytes.byteLength > limits.maxBytes) throw tooLarge(bytes.byteLength, limits);
  if (bytes.byteLength === 0) throw new AppError('VALIDATION_FAILED', 'The audio file is empty.');
  const format = sniffAudioFormat(bytes);
  if (format === undefined) {
    throw new AppError('UNSUPPORTED_MEDIA_TYPE', `This file is not audio we can read. Send ${TAKEN_FORMATS}.`);
  }
  const durationSeconds = headerDuration(bytes, format);
  if (durationSeconds !== undefined && durationSeconds > limits.maxDurationSeconds) throw tooLong(durationSeconds, limits);
  const { mimeType, extension } = NAMING[format];
  const input: AudioInput = { format, mimeType, filename: `voice-message.${extension}` };
  if (durationSeconds !== undefined) input.durationSeconds = durationSeconds;
  return input;
}

function tooLarge(size: number, limits: AudioInputLimits): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `The audio is larger than ${megabytes(limits.maxBytes)} MB; send a shorter recording.`, {
    details: { size, maxBytes: limits.maxBytes },
  });
}

function tooLong(durationSeconds: number, limits: AudioInputLimits): AppError {
  return new AppError('PAYLOAD_TOO_LARGE', `The audio is longer than ${minutesAndSeconds(limits.maxDurationSeconds)}; send a shorter recording.`, {
    details: { durationSeconds, maxDurationSeconds: limits.maxDurationSeconds },
  });
}

function megabytes(bytes: number): string {
  return String(Math.round((bytes / (1024 * 1024)) * 10) / 10);
}

function minutesAndSeconds(seconds: number): string {
  const minutes = Math.floor(seconds / 60);
  const rest = Math.round(seconds % 60);
  if (minutes === 0) return `${rest} seconds`;
  return rest === 0 ? `${minutes} minute${minutes === 1 ? '' : 's'}` : `${minutes} min ${rest} s`;
}
