/**
 * One reply spoken in a call as it is written: each finished sentence is synthesised at once
 * and queued, so the first is heard while the rest is still being generated (the largest
 * saving in a speech-to-text → chat → speech chain), and a sentence plays from its first piece
 * of audio on, not once the engine has made all of it. It can be interrupted: playback stops at
 * the next 20 ms frame, generation and synthesis stop, and it knows how much was heard.
 */
import { Readable } from 'node:stream';
import { type AudioPlayer, AudioPlayerStatus, type AudioResource, StreamType, createAudioResource } from '@discordjs/voice';
import { DiscordFramer } from '../../audio/discord-frames.js';
import { durationMs } from '../../audio/pcm.js';
import { type SpokenSentence, heardText } from '../../core/heard-text.js';
import type { Logger, PcmAudio } from '../../core/ports.js';
import { SentenceCollector } from './sentence-collector.js';

/** Speaks one sentence (the character's voice bound in); `signal` aborts its synthesis at the engine. */
export type SentenceVoice = (sentence: string, signal: AbortSignal) => AsyncIterable<PcmAudio>;

/** A sentence's speech as the engine makes it: pieces so far, and whether that is all. */
class SentenceAudio {
  readonly pieces: PcmAudio[] = [];
  durationMs = 0;
  done = false;
  #wake: (() => void) | undefined;

  add(piece: PcmAudio): void {
    this.pieces.push(piece);
    this.durationMs += durationMs(piece);
    this.#wake?.();
  }

  end(): void {
    this.done = true;
    this.#wake?.();
  }

  /**
   * Resolves once there are more than `count` pieces, the audio is complete, or `signal`
   * aborts: an interruption must not wait for an engine slow to give its first audio.
   */
  async more(count: number, signal: AbortSignal): Promise<void> {
    const wake = () => this.#wake?.();
    signal.addEventListener('abort', wake);
    try {
      while (this.pieces.length <= count && !this.done && !signal.aborted) {
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
      }
    } finally {
      signal.removeEventListener('abort', wake);
    }
  }
}

interface QueuedSentence {
  text: string;
  audio: SentenceAudio;
}

/** Until a reply's first sentence has been heard whole, its pace is guessed at espeak's, ~15 characters a second. */
const GUESSED_MS_PER_CHARACTER = 65;

export class SpokenReply {
  readonly #player: AudioPlayer;
  readonly #voice: SentenceVoice;
  readonly #abort: AbortController;
  readonly #logger: Logger;
  readonly #queue: QueuedSentence[] = [];
  /** Sentences whose playback began, in order, with their audio (still growing for the last). */
  readonly #played: QueuedSentence[] = [];
  #current: AudioResource | undefined;
  #wake: (() => void) | undefined;
  #written = false;
  #interruptedAtMs: number | undefined;
  #failed = false;
  #onSpeaking: (speaking: boolean) => void;

  /**
   * `abort` is the reply's generation signal's controller: interrupting aborts it.
   * `onSpeaking` hears when the character starts and stops being heard (for barge-in).
   */
  constructor(player: AudioPlayer, voice: SentenceVoice, abort: AbortController, logger: Logger, onSpeaking: (speaking: boolean) => void) {
    this.#player = player;
    this.#voice = voice;
    this.#abort = abort;
    this.#logger = logger;
    this.#onSpeaking = onSpeaking;
  }

  get interrupted(): boolean {
    return this.#interruptedAtMs !== undefined;
  }

  /** Speaks the reply's pieces as they come; resolves when all is played or it was interrupted. */
  async speak(pieces: AsyncIterable<string>): Promise<void> {
    const writing = this.#write(pieces);
    try {
      await this.#play();
    } finally {
      this.#onSpeaking(false);
      this.#abort.abort();
      await writing;
    }
  }

  /**
   * Stops at once: the player goes idle at its next 20 ms tick (`stop(true)` skips the five
   * silence frames), nothing more is generated or synthesised. Returns whether it was speaking.
   */
  interrupt(): boolean {
    if (this.#interruptedAtMs !== undefined) return false;
    this.#interruptedAtMs = this.#heardMs();
    this.#player.stop(true);
    this.#abort.abort();
    this.#queue.length = 0;
    this.#wake?.();
    return true;
  }

  /**
   * Whether some of the reply was never spoken though no one interrupted it: a sentence's
   * synthesis failed (it is skipped) or the writing did. What was heard is then not the reply.
   */
  get failed(): boolean {
    return this.#failed;
  }

  /** What a listener heard: all of it, or up to where it was interrupted. */
  heard(): string {
    return heardText(this.#sentencesPlayed(), this.#interruptedAtMs ?? Number.POSITIVE_INFINITY);
  }

  /**
   * The sentences played with their lengths. One cut off while its audio was still coming has
   * no known length: it is guessed from the pace of the sentences heard whole, so the words
   * kept match the share of it played.
   */
  #sentencesPlayed(): SpokenSentence[] {
    const whole = this.#played.filter((sentence) => sentence.audio.done);
    const characters = whole.reduce((sum, sentence) => sum + sentence.text.length, 0);
    const pace = characters > 0 ? whole.reduce((sum, sentence) => sum + sentence.audio.durationMs, 0) / characters : GUESSED_MS_PER_CHARACTER;
    return this.#played.map(({ text, audio }) => ({ text, durationMs: audio.done ? audio.durationMs : Math.max(audio.durationMs, text.length * pace) }));
  }

  /** Milliseconds of the reply played so far: whole sentences, then the one playing. */
  #heardMs(): number {
    const before = this.#sentencesPlayed().slice(0, -1).reduce((sum, sentence) => sum + sentence.durationMs, 0);
    return before + (this.#current?.playbackDuration ?? 0);
  }

  async #write(pieces: AsyncIterable<string>): Promise<void> {
    const sentences = new SentenceCollector();
    try {
      for await (const piece of pieces) {
        if (this.interrupted) break;
        for (const sentence of sentences.push(piece)) this.#enqueue(sentence);
      }
      if (!this.interrupted) for (const sentence of sentences.end()) this.#enqueue(sentence);
    } catch (error) {
      if (this.#abort.signal.aborted) return;
      this.#failed = true;
      this.#logger.warn({ err: error }, 'the reply failed while being spoken');
    } finally {
      this.#written = true;
      this.#wake?.();
    }
  }

  #enqueue(text: string): void {
    if (this.interrupted) return;
    // Synthesis starts now, while earlier sentences play; a failed sentence ends where it failed, not fatal.
    const audio = new SentenceAudio();
    void collect(this.#voice(text, this.#abort.signal), audio, this.#abort.signal)
      .catch((error: unknown) => {
        if (this.#abort.signal.aborted) return;
        this.#failed = true;
        this.#logger.warn({ err: error }, 'a reply sentence could not be spoken');
      })
      .finally(() => audio.end());
    this.#queue.push({ text, audio });
    this.#wake?.();
  }

  async #play(): Promise<void> {
    while (!this.interrupted) {
      const next = this.#queue.shift();
      if (next === undefined) {
        if (this.#written) return;
        await new Promise<void>((resolve) => (this.#wake = resolve));
        this.#wake = undefined;
        continue;
      }
      await next.audio.more(0, this.#abort.signal);
      if (this.interrupted) return;
      if (next.audio.pieces.length === 0) continue;
      this.#played.push(next);
      await this.#playOne(next.audio);
    }
  }

  async #playOne(audio: SentenceAudio): Promise<void> {
    const resource = createAudioResource(Readable.from(discordFrames(audio, this.#abort.signal)), { inputType: StreamType.Raw });
    this.#current = resource;
    const idle = new Promise<void>((resolve) => {
      const onChange = (_old: unknown, next: { status: AudioPlayerStatus }) => {
        if (next.status !== AudioPlayerStatus.Idle) return;
        this.#player.off('stateChange', onChange);
        resolve();
      };
      this.#player.on('stateChange', onChange);
    });
    this.#player.play(resource);
    this.#onSpeaking(true);
    await idle;
  }
}

/** Samples converted at a time, so one sentence's resampling does not hold every call's 20 ms frames. */
const conversionSamples = 4096;

/** A sentence's audio as 20 ms frames, each piece framed as it arrives; ends early once `signal` aborts. */
async function* discordFrames(audio: SentenceAudio, signal: AbortSignal): AsyncGenerator<Buffer> {
  const framer = new DiscordFramer();
  for (let index = 0; ; index++) {
    await audio.more(index, signal);
    const piece = audio.pieces[index];
    if (piece === undefined || signal.aborted) break;
    for (let start = 0; start < piece.samples.length; start += conversionSamples) {
      yield* framer.push({ sampleRate: piece.sampleRate, samples: piece.samples.subarray(start, start + conversionSamples) });
    }
  }
  yield* framer.end();
}

/** Every piece of a sentence's speech into `audio`; stops reading the engine once `signal` aborts. */
async function collect(pieces: AsyncIterable<PcmAudio>, audio: SentenceAudio, signal: AbortSignal): Promise<void> {
  for await (const piece of pieces) {
    if (signal.aborted) break;
    audio.add(piece);
  }
}
