import { createHash } from 'node:crypto';
import { speakableText } from './speakable-text.js';
import { castVoices } from './cast-voices.js';
import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { AppError, ValidationError } from './errors.js';
import { createSystemClock } from './clock.js';
import type { AudioEncoder, CallOptions, Clock, FileStore, Logger, PcmAudio, SpeechEngine, SpeechVoice, StoredFile, UseLimit, VoiceSample } from './ports.js';
import type { CharacterRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';

export const voiceSampleLimits = { count: { minimum: 1, maximum: 25 }, bytes: 10 * 1024 * 1024, totalBytes: 50 * 1024 * 1024 } as const;

const audioTypes = ['audio/mpeg', 'audio/mp3', 'audio/wav', 'audio/x-wav', 'audio/wave', 'audio/ogg', 'audio/webm', 'audio/flac', 'audio/mp4', 'audio/x-m4a', 'audio/aac'];

/** The voice the engine cloned for a character, which the service must delete when it is done with it. */
function clonedVoiceKey(characterId: string): string {
  return `cloned-voice:${characterId}`;
}

export type VoiceTraining = { voiceId: string } | { name?: string; samples: readonly VoiceSample[] };

export interface SpeechOptions {
  /** The longest text a person may ask to hear (`/speak`, `POST …/speak`), in characters. */
  maxTextCharacters: number;
  /** A kept audio no one asked for this long is let go of by the file sweep. */
  cacheRetentionMs: number;
  /** The kept audio together; past it the sweep lets go of those asked for longest ago. */
  cacheMaxBytes: number;
  /** Texts an account may ask to hear a minute, counted across processes where the store is shared; none without. */
  limit?: UseLimit | undefined;
}

export const defaultSpeechOptions: SpeechOptions = { maxTextCharacters: 1000, cacheRetentionMs: 30 * 24 * 60 * 60_000, cacheMaxBytes: 1024 * 1024 * 1024 };

/**
 * Characters' voices: choosing a preset or cloning one from samples, and speaking text as
 * mp3. The same voice and text reuse the stored audio instead of synthesising again, while
 * it is kept (`SpeechOptions`: the file sweep lets go of it). What people ask to hear is
 * bounded in length and counted per account (`admit`); replies spoken as part of a chat are
 * counted as chats.
 */
export class Speech {
  /** Syntheses running in this process, so one text asked for twice at once is spoken once. */
  readonly #speaking = new Map<string, Promise<StoredFile>>();

  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly characters: Characters,
    private readonly engine: SpeechEngine,
    private readonly encoder: AudioEncoder,
    private readonly logger?: Logger,
    private readonly clock: Clock = createSystemClock(),
    private readonly options: SpeechOptions = defaultSpeechOptions,
  ) {}

  get provider(): string {
    return this.engine.provider;
  }

  get maxTextLength(): number {
    return this.engine.maxTextLength;
  }

  voices(options?: CallOptions): Promise<SpeechVoice[]> {
    return this.engine.listVoices(options);
  }

  /** Gives the owner's character a voice: one the engine offers, or one cloned from samples. */
  async train(actor: Actor, characterId: string, training: VoiceTraining): Promise<CharacterRecord> {
    const character = await this.characters.getOwned(actor, characterId);
    let voiceId: string;
    if ('voiceId' in training) {
      voiceId = training.voiceId.trim();
      if (!voiceId) throw ValidationError.field('voiceId', 'must not be empty');
      const offered = await this.engine.listVoices();
      // A voice outside the list (an espeak preset with its own pitch and rate) is tried once.
      if (!offered.some((voice) => voice.id === voiceId)) await this.engine.synthesize({ text: 'Hello.', voiceId });
    } else {
      checkSamples(training.samples);
      if (!this.engine.cloneVoice) {
        throw ValidationError.field('samples', `the ${this.engine.provider} speech engine cannot clone voices; choose one of GET /api/v0/voices as voiceId`);
      }
      voiceId = (await this.engine.cloneVoice({ name: training.name?.trim() || character.name, samples: training.samples })).id;
    }
    const updated = await this.characters.setVoice(actor, characterId, voiceId);
    // The voice cloned for it before holds a person's samples at the engine: deleted once replaced.
    const earlier = await this.store.facts.get<string>(clonedVoiceKey(characterId));
    if ('samples' in training) await this.store.facts.set(clonedVoiceKey(characterId), voiceId);
    else await this.store.facts.delete(clonedVoiceKey(characterId));
    if (earlier !== undefined && earlier !== voiceId) await this.#deleteVoice(characterId, earlier);
    return updated;
  }

  /** Deletes at the engine the voice cloned for a character (being deleted): its samples go too. */
  async forgetVoice(characterId: string): Promise<void> {
    const cloned = await this.store.facts.get<string>(clonedVoiceKey(characterId));
    if (cloned === undefined) return;
    await this.#deleteVoice(characterId, cloned);
    await this.store.facts.delete(clonedVoiceKey(characterId));
  }

  async #deleteVoice(characterId: string, voiceId: string): Promise<void> {
    try {
      await this.engine.deleteVoice?.(voiceId);
    } catch (error) {
      this.logger?.warn({ err: error, characterId, voiceId }, 'could not delete a cloned voice at the speech engine; delete it there by hand');
    }
  }

  /**
   * The character's speech of `text` as a stored mp3, asked for by `actor` (see `admit`); 409
   * VOICE_NOT_TRAINED before it has a voice.
   */
  async speak(actor: Actor, characterId: string, text: string): Promise<StoredFile> {
    const character = await this.characters.get(actor, characterId);
    this.requireVoice(character);
    await this.admit(actor, text);
    return this.speakAs(character, text);
  }

  /**
   * Lets a person's request to hear `text` through, or refuses it: 400 SPEECH_TEXT_TOO_LONG
   * past `maxTextCharacters` (before it counts), 429 RATE_LIMITED past the account's uses a
   * minute. Front ends call it (or `speak`) before speaking what a person asked for.
   */
  async admit(actor: Actor, text: string): Promise<void> {
    const characters = [...text].length;
    const { maxTextCharacters, limit } = this.options;
    if (characters > maxTextCharacters) {
      throw new AppError(
        'SPEECH_TEXT_TOO_LONG',
        `The text to speak is ${characters} characters; at most ${maxTextCharacters} characters are spoken at once (SPEECH_MAX_TEXT_CHARACTERS). Send a shorter text, or it in parts.`,
        { details: { characters, maxCharacters: maxTextCharacters } },
      );
    }
    if (!limit) return;
    const waitMs = await limit.take(actor.type === 'admin' ? 'admin' : actor.accountId);
    if (waitMs === undefined) return;
    const retryAfterSeconds = Math.max(1, Math.ceil(waitMs / 1000));
    throw new AppError(
      'RATE_LIMITED',
      `Too much speech: at most ${limit.perMinute} texts a minute per account (SPEECH_RATE_LIMIT_PER_MINUTE). Try again in ${retryAfterSeconds} s.`,
      { details: { retryAfterSeconds } },
    );
  }

  /** The character's voice id, or 409 VOICE_NOT_TRAINED saying how to give it one. */
  requireVoice(character: CharacterRecord): string {
    if (character.ttsVoiceId) return character.ttsVoiceId;
    throw new AppError(
      'VOICE_NOT_TRAINED',
      `${character.name} has no voice yet; its owner can give it one (POST /api/v0/characters/${character.id}/voice, or /character voice on Discord).`,
    );
  }

  /**
   * `cast` as it speaks together aloud (a scene in a voice call): each character with its own
   * voice, or, without one, a stand-in the engine offers in `language` that no one else in the
   * cast has (see `castVoices`). The stand-in is for this speech only and is never stored. The
   * engine is asked for its voices only when someone lacks one; if it cannot say, they stay
   * without (and `streamAs` says so).
   */
  async voicedCast(cast: readonly CharacterRecord[], options: CallOptions & { language?: string | undefined } = {}): Promise<CharacterRecord[]> {
    if (cast.every((character) => character.ttsVoiceId)) return [...cast];
    const offered = await this.engine.listVoices({ signal: options.signal }).catch((error: unknown) => {
      this.logger?.warn({ err: error }, 'could not list the speech engine voices for a character without a voice');
      return [];
    });
    return castVoices(cast, offered, options.language);
  }

  /**
   * The character's speech as PCM pieces, for live playback (speech starts before it is all
   * made). Only what is said aloud is spoken (see `speakableText`); a text of nothing but
   * actions, links or code gives no audio. `signal` cancels the synthesis at the engine (a
   * reply talked over stops its requests, not only its playback).
   */
  streamAs(character: CharacterRecord, text: string, options: CallOptions = {}): AsyncIterable<PcmAudio> {
    const voiceId = this.requireVoice(character);
    const spoken = this.#spoken(text);
    if (spoken === '') return (async function* () {})();
    return this.engine.stream({ text: spoken, voiceId }, { signal: options.signal });
  }

  /** Speaks for a character already loaded (e.g. its reply in a conversation): what is said aloud of it. */
  async speakAs(character: CharacterRecord, text: string): Promise<StoredFile> {
    const voiceId = this.requireVoice(character);
    const spoken = this.#spoken(text);
    if (spoken === '') throw ValidationError.field('text', 'has nothing to say aloud (only actions between asterisks, links, code or markup)');
    const hash = createHash('sha256').update(`${this.engine.provider}\n${voiceId}\n${spoken}`).digest('hex');
    const running = this.#speaking.get(hash);
    if (running) return running;
    const speaking = this.#speak(hash, spoken, voiceId, character.accountId).finally(() => this.#speaking.delete(hash));
    this.#speaking.set(hash, speaking);
    return speaking;
  }

  /** What of `text` is said aloud, checked: empty when nothing is (and `text` was not empty). */
  #spoken(text: string): string {
    if (text.trim().length === 0) throw ValidationError.field('text', 'must not be empty');
    const spoken = speakableText(text);
    if (spoken.length > this.engine.maxTextLength) throw ValidationError.field('text', `must be at most ${this.engine.maxTextLength} characters`);
    return spoken;
  }

  /**
   * The audio kept is in the database, so every process reuses what any of them spoke; files
   * are content-addressed, so two processes speaking one text at once store one file. Asking
   * for it again starts its retention anew.
   */
  async #speak(hash: string, spoken: string, voiceId: string, accountId: string): Promise<StoredFile> {
    const known = await this.store.speechAudio.use(hash, this.clock.nowMicros());
    if (known) return known;
    const pcm = await this.engine.synthesize({ text: spoken, voiceId });
    // Stored before it is recorded: the store renews a release of the same bytes, so the sweep
    // leaves the file alone until the row holds it.
    const file = await this.files.put(await this.encoder.mp3(pcm), 'audio/mpeg');
    await this.store.speechAudio.record(hash, { file, accountId }, this.clock.nowMicros());
    return file;
  }
}

function checkSamples(samples: readonly VoiceSample[]): void {
  const { count, bytes, totalBytes } = voiceSampleLimits;
  if (samples.length < count.minimum || samples.length > count.maximum) {
    throw ValidationError.field('samples', `send ${count.minimum} to ${count.maximum} audio samples, not ${samples.length}`);
  }
  let total = 0;
  for (const [index, sample] of samples.entries()) {
    if (!audioTypes.includes(sample.mimeType.split(';')[0]!.trim().toLowerCase())) {
      throw ValidationError.field(`samples.${index}`, `${sample.filename} must be audio (mp3, wav, ogg, webm, flac or m4a), not ${sample.mimeType}`);
    }
    if (sample.data.byteLength > bytes) throw new AppError('PAYLOAD_TOO_LARGE', `${sample.filename} is larger than 10 MB.`);
    total += sample.data.byteLength;
  }
  if (total > totalBytes) throw new AppError('PAYLOAD_TOO_LARGE', 'The samples together are larger than 50 MB.');
}
