/**
 * What a test user says, turned into what their Discord client would send: 20 ms Opus frames of
 * 48 kHz stereo, encoded with opusscript (the encoder @discordjs/voice falls back to for playback).
 * Text is spoken by the project's espeak-ng engine, the same one the voice tests synthesise with.
 */
import OpusScript from 'opusscript';
import { toDiscordFrames, DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE, DISCORD_CHANNELS } from '../../../src/audio/discord-frames.js';
import type { PcmAudio } from '../../../src/core/ports.js';
import { createEspeakSpeechEngine, type EspeakSpeechEngine } from '../../../src/engines/speech/espeak.js';

/** A voice the espeak engine knows; a second speaker reads better in another one (`en-us+m3`). */
export const DEFAULT_SPEECH_VOICE = 'en-us+f3';

/**
 * One part of what a user says: mono PCM at any rate (48 kHz needs no resampling), text for
 * espeak, or a pause in which the client sends nothing at all.
 */
export type Speech = PcmAudio | { text: string; voiceId?: string } | { pauseMs: number };

/** A stretch of talk ready to send, or a pause. */
export type PreparedSpeech = { kind: 'talk'; opus: Buffer[]; pcmMs: number } | { kind: 'pause'; pauseMs: number };

/** Turns speech into Opus frames; holds one espeak worker, started on first use. */
export class SpeechPreparer {
  #engine: EspeakSpeechEngine | undefined;
  /** Recordings already encoded (`encodeAhead`): a client encodes as it captures, it never stalls to. */
  readonly #encoded = new WeakMap<PcmAudio, { opus: Buffer[]; pcmMs: number }>();

  async prepare(parts: readonly Speech[]): Promise<PreparedSpeech[]> {
    const prepared: PreparedSpeech[] = [];
    for (const part of parts) {
      if ('pauseMs' in part) {
        prepared.push({ kind: 'pause', pauseMs: part.pauseMs });
        continue;
      }
      const pcm = 'text' in part ? await this.synthesize(part.text, part.voiceId ?? DEFAULT_SPEECH_VOICE) : part;
      const encoded = this.#encoded.get(pcm);
      const talk = encoded ? { kind: 'talk' as const, opus: [...encoded.opus], pcmMs: encoded.pcmMs } : encodeOpusFrames(pcm);
      // Back-to-back talk is one stretch: a client's voice activity does not stop between them.
      const last = prepared.at(-1);
      if (last?.kind === 'talk') {
        last.opus.push(...talk.opus);
        last.pcmMs += talk.pcmMs;
      } else prepared.push(talk);
    }
    return prepared;
  }

  /**
   * Encodes recordings now, so speaking them later starts at once. Encoding a few seconds of
   * audio takes this process ~100 ms; several people starting at once would hold up the packets
   * of those already talking, which real clients, each on its own machine, never do.
   */
  encodeAhead(recordings: readonly PcmAudio[]): void {
    for (const pcm of recordings) if (!this.#encoded.has(pcm)) this.#encoded.set(pcm, encodeOpusFrames(pcm));
  }

  /** What espeak says for `text`, mono at its own rate. */
  synthesize(text: string, voiceId = DEFAULT_SPEECH_VOICE): Promise<PcmAudio> {
    this.#engine ??= createEspeakSpeechEngine();
    return this.#engine.synthesize({ text, voiceId });
  }

  async close(): Promise<void> {
    await this.#engine?.close();
    this.#engine = undefined;
  }
}

/** Opus frames of mono speech, the last padded with silence to a whole 20 ms. */
export function encodeOpusFrames(pcm: PcmAudio): { kind: 'talk'; opus: Buffer[]; pcmMs: number } {
  // Discord clients send stereo Opus; the receiver's decoder is set up for two channels.
  const encoder = new OpusScript(DISCORD_SAMPLE_RATE, DISCORD_CHANNELS, OpusScript.Application.VOIP);
  try {
    // Copied out: opusscript answers with a view of its WebAssembly memory, reused by the next call.
    const opus = toDiscordFrames(pcm).map((frame) => Buffer.from(encoder.encode(frame, DISCORD_FRAME_SAMPLES)));
    return { kind: 'talk', opus, pcmMs: pcm.sampleRate > 0 ? (pcm.samples.length * 1000) / pcm.sampleRate : 0 };
  } finally {
    encoder.delete();
  }
}
