/**
 * The voices of an OpenAI-style speech server. OpenAI has no endpoint listing them, so the
 * list is configured (OpenAI's own by default); servers that do list theirs at
 * `GET {base}/audio/voices` (Kokoro-FastAPI: `{voices:["af_heart", …]}`) are asked, and what
 * they answer is kept for a while.
 */
import { ValidationError } from '../../core/errors.js';
import type { SpeechVoice } from '../../core/ports.js';

/** OpenAI's voices (tts-1 and tts-1-hd know all but ballad and verse; gpt-4o-mini-tts all). */
export const OPENAI_VOICES: readonly string[] = ['alloy', 'ash', 'ballad', 'coral', 'echo', 'fable', 'nova', 'onyx', 'sage', 'shimmer', 'verse'];

/** Kokoro's voice ids start with a language letter and a gender letter: `af_heart`. */
const KOKORO_LANGUAGES: Record<string, [tag: string, name: string]> = {
  a: ['en-US', 'American English'],
  b: ['en-GB', 'British English'],
  e: ['es', 'Spanish'],
  f: ['fr', 'French'],
  h: ['hi', 'Hindi'],
  i: ['it', 'Italian'],
  j: ['ja', 'Japanese'],
  p: ['pt-BR', 'Brazilian Portuguese'],
  z: ['zh', 'Mandarin Chinese'],
};

/** A voice from its id alone: Kokoro ids say their language and gender, others are capitalised. */
export function voiceFromId(id: string): SpeechVoice {
  const kokoro = /^([a-z])([fm])_([a-z0-9_]+)$/.exec(id);
  const language = kokoro === null ? undefined : KOKORO_LANGUAGES[kokoro[1]!];
  if (kokoro !== null && language !== undefined) {
    return { id, name: `${capitalise(kokoro[3]!)} (${language[1]}, ${kokoro[2] === 'f' ? 'female' : 'male'})`, language: language[0] };
  }
  return { id, name: capitalise(id) };
}

function capitalise(word: string): string {
  return word.length === 0 ? word : `${word[0]!.toUpperCase()}${word.slice(1)}`;
}

/** The voices of a `GET /audio/voices` answer: `{voices:[…]}` or a bare list, of ids or objects. */
export function voicesOf(body: unknown): SpeechVoice[] | undefined {
  const list = Array.isArray(body) ? body : body !== null && typeof body === 'object' ? (body as Record<string, unknown>)['voices'] : undefined;
  if (!Array.isArray(list)) return undefined;
  const voices: SpeechVoice[] = [];
  for (const entry of list) {
    if (typeof entry === 'string' && entry !== '') voices.push(voiceFromId(entry));
    else if (entry !== null && typeof entry === 'object') {
      const record = entry as Record<string, unknown>;
      const id = [record['id'], record['voice_id'], record['name']].find((value): value is string => typeof value === 'string' && value !== '');
      if (id === undefined) continue;
      const voice = voiceFromId(id);
      if (typeof record['name'] === 'string' && record['name'] !== id) voice.name = record['name'];
      voices.push(voice);
    }
  }
  return voices;
}

export interface VoiceListOptions {
  configured: readonly SpeechVoice[];
  /** The server's own list, or undefined when it has none; absent when not to ask. */
  discover?: (() => Promise<SpeechVoice[] | undefined>) | undefined;
  /** How long an answer (or the lack of one) is kept. */
  ttlMs: number;
  now?: () => number;
}

/** The list offered, and the check that a voice id is on it. */
export class VoiceList {
  readonly #options: VoiceListOptions;
  #cached: Loaded | undefined;
  /** A discovery under way, shared by everyone who asks meanwhile. */
  #loading: Promise<Loaded> | undefined;

  constructor(options: VoiceListOptions) {
    this.#options = options;
  }

  /** The server's list when it has one, else the configured one. */
  async list(signal?: AbortSignal): Promise<SpeechVoice[]> {
    return (await this.#load(signal)).voices;
  }

  /**
   * Refuses a voice neither listed nor configured. Kokoro mixes voices as `af_bella+af_sky`
   * or `af_bella(2)+af_sky(1)`: each part must be known.
   */
  async check(voiceId: string, signal?: AbortSignal): Promise<void> {
    const { known } = await this.#load(signal);
    const parts = voiceId.split('+').map((part) => part.trim().replace(/\(\d+(?:\.\d+)?\)$/, ''));
    const unknown = parts.find((part) => !known.has(part));
    if (unknown !== undefined) {
      const offered = [...known].slice(0, 12).join(', ');
      throw ValidationError.field('voiceId', `"${voiceId}" is not a voice of this speech engine${unknown === voiceId ? '' : ` (${unknown} is unknown)`}; try ${offered}`);
    }
  }

  async #load(signal: AbortSignal | undefined): Promise<Loaded> {
    signal?.throwIfAborted();
    const now = this.#options.now ?? Date.now;
    if (this.#cached !== undefined && this.#cached.until > now()) return this.#cached;
    this.#loading ??= this.#discover(now).finally(() => (this.#loading = undefined));
    const loaded = await this.#loading;
    signal?.throwIfAborted();
    return loaded;
  }

  async #discover(now: () => number): Promise<Loaded> {
    const discovered = await this.#options.discover?.();
    const voices = discovered !== undefined && discovered.length > 0 ? discovered : [...this.#options.configured];
    const known = new Set([...voices, ...this.#options.configured].map((voice) => voice.id));
    this.#cached = { voices, known, until: now() + this.#options.ttlMs };
    return this.#cached;
  }
}

interface Loaded {
  voices: SpeechVoice[];
  known: Set<string>;
  until: number;
}
