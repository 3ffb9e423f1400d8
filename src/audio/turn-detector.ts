/**
 * Turn-taking for one person in a voice call: fed their 20 ms frames as they arrive, it says
 * when they start talking, when a turn is over (and its audio), and when they talk over the
 * character long enough to interrupt it. Pure: no I/O, the caller passes the clock's time.
 *
 * Discord clients send nothing while a person is silent, so silence is measured two ways and
 * the larger wins: unvoiced frames received (a client still transmitting a quiet room) and
 * clock time since the last voiced frame arrived (a client that stopped). Voiced length is
 * counted in frames, which is what was said however fast the packets came in.
 */
import type { PcmAudio } from '../core/ports.js';
import { DISCORD_FRAME_MS, DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE } from './discord-frames.js';
import { concatPcm } from './pcm.js';
import { Resampler } from './resample.js';
import type { VoiceActivity } from './voice-activity.js';

/** Thresholds, all in milliseconds. */
export interface TurnOptions {
  /** Quiet after which a turn is over (OpenAI's server VAD uses 500, LiveKit at least 500). */
  silenceMs: number;
  /**
   * Voiced time below which a turn is dropped: a cough, a "mm", a door. The WebRTC VAD keeps
   * calling a sound voiced ~100 ms after it stops, so a 150 ms cough counts ~260 ms.
   */
  minimumSpeechMs: number;
  /** Continuous voiced time before speech is believed to have started. */
  onsetMs: number;
  /** Audio kept from before the onset, so the first syllable is not clipped. */
  preRollMs: number;
  /** A turn this long is cut and sent, and listening goes on: memory stays bounded. */
  maximumTurnMs: number;
  /** Continuous voiced time over the character that interrupts it (LiveKit and Pipecat: ~500). */
  bargeInMs: number;
  /** Unvoiced time that breaks a run of speech for barge-in (stop consonants last a frame or two). */
  bargeInGapMs: number;
  /**
   * Quiet after which the turn so far is offered (`turn-likely`) to be transcribed before it is
   * known to be over, so its words are ready when the silence threshold is reached; 0: never.
   * Speech resuming withdraws the offer (`speech-resumed`).
   */
  speculateMs: number;
}

export const DEFAULT_TURN_OPTIONS: Readonly<TurnOptions> = {
  silenceMs: 600,
  minimumSpeechMs: 300,
  onsetMs: 60,
  preRollMs: 300,
  maximumTurnMs: 30_000,
  bargeInMs: 500,
  bargeInGapMs: 120,
  speculateMs: 300,
};

/** Speech-to-text engines (Whisper and the like) take 16 kHz mono. */
export const SPEECH_TO_TEXT_SAMPLE_RATE = 16_000;

/** A finished turn: 48 kHz mono audio from just before the onset to the end of the silence. */
export interface Turn {
  audio: PcmAudio;
  /**
   * The same audio at 16 kHz, as speech-to-text takes it: resampled frame by frame as it
   * arrived, so writing a turn down (early, or again and again for a turn with pauses) never
   * resamples the whole turn at once on the thread that plays every call's audio. An offered
   * turn's ends a few milliseconds (the filter's reach) short of its 48 kHz audio.
   */
  speech: PcmAudio;
  voicedMs: number;
  /** Clock times of the onset's first voiced frame and of the last voiced frame. */
  startedAt: number;
  lastVoicedAt: number;
  /** True when `maximumTurnMs` cut it and the person is still talking. */
  cut: boolean;
  /**
   * True when this turn was offered as `turn-likely` and nothing voiced came since: the offered
   * audio holds all of its speech (what follows was judged silence), so its transcript stands.
   */
  likely: boolean;
}

export type TurnEvent =
  | { type: 'speech-start'; at: number }
  | { type: 'turn'; turn: Turn }
  /** Quiet for `speculateMs`: the turn may be over; its audio so far, for an early transcript. */
  | { type: 'turn-likely'; turn: Turn; at: number }
  /** Speech came back after `turn-likely`: that audio is not the whole turn. */
  | { type: 'speech-resumed'; at: number }
  | { type: 'dropped'; voicedMs: number; at: number }
  | { type: 'barge-in'; at: number };

const SILENT_FRAME = new Int16Array(DISCORD_FRAME_SAMPLES);
/** Gaps in arrival shorter than this are network jitter, not a pause worth keeping as silence. */
const PAUSE_WORTH_KEEPING_MS = 100;

export class TurnDetector {
  readonly options: Readonly<TurnOptions>;
  readonly #voiceActivity: VoiceActivity;
  /** Idle: the last frames, for the pre-roll. In a turn: every frame of the turn. */
  #frames: Int16Array[] = [];
  /** In a turn: its frames at 16 kHz so far, and the resampler that made them (its filter state runs across frames). */
  #speech: Int16Array[] = [];
  #resampler: Resampler | undefined;
  #inTurn = false;
  #startedAt = 0;
  #voicedMs = 0;
  #onsetRunMs = 0;
  #onsetStartedAt = 0;
  #lastFrameAt: number | undefined;
  #lastVoicedAt = 0;
  #unvoicedSinceVoiceMs = 0;
  #runVoicedMs = 0;
  #bargedIn = false;
  #characterSpeaking = false;
  /** A `turn-likely` was sent and no voiced frame came since. */
  #offered = false;

  constructor(voiceActivity: VoiceActivity, options: Partial<TurnOptions> = {}) {
    this.#voiceActivity = voiceActivity;
    this.options = { ...DEFAULT_TURN_OPTIONS, ...options };
  }

  /** Whether a turn is under way (speech started and not yet over). */
  get inTurn(): boolean {
    return this.#inTurn;
  }

  /**
   * Tells the detector whether the character is talking; barge-in is signalled only then. A
   * person already talking when the character starts interrupts it on their next voiced frame.
   */
  setCharacterSpeaking(speaking: boolean): void {
    this.#characterSpeaking = speaking;
  }

  /** One 20 ms frame of 48 kHz mono audio, received at `now`. */
  push(frame: Int16Array, now: number): TurnEvent[] {
    const events = this.tick(now);
    this.#keepPause(now);
    this.#lastFrameAt = now;
    const voiced = this.#voiceActivity.isVoiced(frame);
    this.#keep(frame);
    if (voiced) this.#voiced(now, events);
    else this.#unvoiced(events, now);
    if (this.#inTurn && this.#frames.length * DISCORD_FRAME_MS >= this.options.maximumTurnMs) events.push(this.#endTurn(true, now));
    return events;
  }

  /** Lets time pass with no frame: ends a turn whose silence has lasted long enough. */
  tick(now: number): TurnEvent[] {
    if (!this.#inTurn) {
      if (this.#lastFrameAt !== undefined && now - this.#lastFrameAt >= this.options.preRollMs) this.#forgetIdleAudio();
      return [];
    }
    if (now - this.#lastVoicedAt >= this.options.bargeInGapMs) {
      this.#runVoicedMs = 0;
      this.#bargedIn = false;
    }
    const silenceMs = Math.max(this.#unvoicedSinceVoiceMs, now - this.#lastVoicedAt);
    if (silenceMs >= this.options.silenceMs) return [this.#endTurn(false, now)];
    return this.#offer(silenceMs, now);
  }

  /** Ends any turn now, as when the person leaves: its audio is sent if it is long enough. */
  flush(now: number): TurnEvent[] {
    const events = this.#inTurn ? [this.#endTurn(false, now)] : [];
    this.#forgetIdleAudio();
    return events;
  }

  #voiced(now: number, events: TurnEvent[]): void {
    this.#lastVoicedAt = now;
    this.#unvoicedSinceVoiceMs = 0;
    if (!this.#inTurn) {
      if (this.#onsetRunMs === 0) this.#onsetStartedAt = now;
      this.#onsetRunMs += DISCORD_FRAME_MS;
      this.#trimPreRoll();
      if (this.#onsetRunMs < this.options.onsetMs) return;
      this.#inTurn = true;
      this.#startedAt = this.#onsetStartedAt;
      this.#voicedMs = this.#onsetRunMs;
      this.#runVoicedMs = this.#onsetRunMs;
      this.#bargedIn = false;
      this.#startSpeech();
      events.push({ type: 'speech-start', at: this.#startedAt });
    } else {
      this.#voicedMs += DISCORD_FRAME_MS;
      this.#runVoicedMs += DISCORD_FRAME_MS;
      if (this.#offered) {
        this.#offered = false;
        events.push({ type: 'speech-resumed', at: now });
      }
    }
    if (this.#characterSpeaking && !this.#bargedIn && this.#runVoicedMs >= this.options.bargeInMs) {
      this.#bargedIn = true;
      events.push({ type: 'barge-in', at: now });
    }
  }

  #unvoiced(events: TurnEvent[], now: number): void {
    if (!this.#inTurn) {
      this.#onsetRunMs = 0;
      this.#trimPreRoll();
      return;
    }
    this.#unvoicedSinceVoiceMs += DISCORD_FRAME_MS;
    if (this.#unvoicedSinceVoiceMs >= this.options.bargeInGapMs) {
      this.#runVoicedMs = 0;
      this.#bargedIn = false;
    }
    if (this.#unvoicedSinceVoiceMs >= this.options.silenceMs) events.push(this.#endTurn(false, now));
    else events.push(...this.#offer(this.#unvoicedSinceVoiceMs, now));
  }

  /**
   * Once per stretch of quiet, the turn so far as it would end now: a turn of too little speech
   * would be dropped, so it is not offered.
   */
  #offer(silenceMs: number, now: number): TurnEvent[] {
    const { speculateMs, minimumSpeechMs } = this.options;
    if (this.#offered || speculateMs <= 0 || silenceMs < speculateMs || this.#voicedMs < minimumSpeechMs) return [];
    this.#offered = true;
    return [{ type: 'turn-likely', turn: this.#turnSoFar(false, false), at: now }];
  }

  /** The turn as it is now; `ended`, its 16 kHz audio takes the resampler's tail (it is then done). */
  #turnSoFar(cut: boolean, ended: boolean): Turn {
    const audio = concatPcm(
      this.#frames.map((samples) => ({ sampleRate: DISCORD_SAMPLE_RATE, samples })),
      DISCORD_SAMPLE_RATE,
    );
    const speechPieces = ended && this.#resampler ? [...this.#speech, this.#resampler.flush()] : this.#speech;
    const speech = concatPcm(
      speechPieces.map((samples) => ({ sampleRate: SPEECH_TO_TEXT_SAMPLE_RATE, samples })),
      SPEECH_TO_TEXT_SAMPLE_RATE,
    );
    return { audio, speech, voicedMs: this.#voicedMs, startedAt: this.#startedAt, lastVoicedAt: this.#lastVoicedAt, cut, likely: this.#offered && !cut };
  }

  /** A frame of the turn (or of the idle pre-roll): kept, and in a turn resampled for speech-to-text at once. */
  #keep(frame: Int16Array): void {
    this.#frames.push(frame);
    if (this.#resampler) this.#speech.push(this.#resampler.push(frame));
  }

  /** A turn begins (or goes on past a cut): its 16 kHz audio starts from the frames kept so far (the pre-roll). */
  #startSpeech(): void {
    this.#resampler = new Resampler(DISCORD_SAMPLE_RATE, SPEECH_TO_TEXT_SAMPLE_RATE);
    this.#speech = this.#frames.map((frame) => this.#resampler!.push(frame));
  }

  /**
   * Packets stop in pauses, so a pause within a turn would vanish from its audio: keep it as
   * silence (up to the silence threshold), which speech-to-text reads as a phrase boundary.
   */
  #keepPause(now: number): void {
    if (!this.#inTurn || this.#lastFrameAt === undefined) return;
    const gapMs = now - this.#lastFrameAt - DISCORD_FRAME_MS;
    if (gapMs < PAUSE_WORTH_KEEPING_MS) return;
    const frames = Math.round(Math.min(gapMs, this.options.silenceMs) / DISCORD_FRAME_MS);
    for (let index = 0; index < frames; index++) this.#keep(SILENT_FRAME);
  }

  #endTurn(cut: boolean, now: number): TurnEvent {
    const voicedMs = this.#voicedMs;
    const event: TurnEvent = !cut && voicedMs < this.options.minimumSpeechMs ? { type: 'dropped', voicedMs, at: now } : { type: 'turn', turn: this.#turnSoFar(cut, true) };
    this.#frames = [];
    this.#speech = [];
    this.#resampler = undefined;
    // A cut turn goes on at once: its next part is resampled from its first frame.
    if (cut) this.#startSpeech();
    this.#voicedMs = 0;
    this.#startedAt = now;
    this.#offered = false;
    if (!cut) {
      this.#inTurn = false;
      this.#onsetRunMs = 0;
      this.#runVoicedMs = 0;
      this.#unvoicedSinceVoiceMs = 0;
    }
    return event;
  }

  #trimPreRoll(): void {
    const keep = Math.max(1, Math.round(this.options.preRollMs / DISCORD_FRAME_MS));
    if (this.#frames.length > keep) this.#frames.splice(0, this.#frames.length - keep);
  }

  #forgetIdleAudio(): void {
    if (this.#inTurn) return;
    this.#frames = [];
    this.#onsetRunMs = 0;
  }
}
