import { createHash } from 'node:crypto';
import { speakableText } from './speakable-text.js';
import { castVoices } from './cast-voices.js';
import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { AppError, ValidationError } from './errors.js';
import type { AudioEncoder, CallOptions, FileStore, Logger, PcmAudio, SpeechEngine, SpeechVoice, StoredFile, VoiceSample } from './ports.js';
import type { CharacterRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';

export const voiceSampleLimits = { count: { minimum: 1, maximum: 25 }, bytes: 10 * 1024 * 1024, totalBytes: 50 * 1024 * 1024 } as const;

const audioTypes = ['audio/mpeg', 'audio/mp3', 'audio/wav', 'audio/x-wav', 'audio/wave', 'audio/ogg', 'audio/webm', 'audio/flac', 'audio/mp4', 'audio/x-m4a', 'audio/aac'];

/** The voice the engine cloned for a character, which the service must delete when it is done with it. */
function clonedVoiceKey(characterId: string): string {
  return `cloned-voice:${characterId}`;
}

export type VoiceTraining = { voiceId: string } | { name?: string; samples: readonly VoiceSample[] };

/**
 * Characters' voices: choosing a preset or cloning one from samples, and speaking text as
 * mp3. The same voice and text reuse the stored audio instead of synthesising again.
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

  /** The character's speech of `text` as a stored mp3; 409 VOICE_NOT_TRAINED before it has a voice. */
  async speak(actor: Actor, characterId: string, text: string): Promise<StoredFile> {
    const character = await this.characters.get(actor, characterId);
    return this.speakAs(character, text);
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
    const speaking = this.#speak(hash, spoken, voiceId).finally(() => this.#speaking.delete(hash));
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
   * The audio index is a fact in the database, so every process reuses what any of them spoke;
   * files are content-addressed, so two processes speaking one text at once store one file.
   */
  async #speak(hash: string, spoken: string, voiceId: string): Promise<StoredFile> {
    const key = `speech:${hash}`;
    const known = await this.store.facts.get<StoredFile>(key);
    if (known) return known;
    const pcm = await this.engine.synthesize({ text: spoken, voiceId });
    const file = await this.files.put(await this.encoder.mp3(pcm), 'audio/mpeg');
    await this.store.facts.set(key, file);
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
