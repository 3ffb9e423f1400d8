/**
 * Opus encoding of Discord frames with opusscript (libopus compiled to WASM), so no native
 * module has to be built. Each encoder holds WASM memory: call `delete()` when done.
 */
import OpusScript from 'opusscript';
import { DISCORD_CHANNELS, DISCORD_FRAME_BYTES, DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE } from './discord-frames.js';

/** libopus's OPUS_SET_BITRATE_REQUEST. */
const SET_BITRATE = 4002;

export interface OpusFrameEncoderOptions {
  /** `voip` favours speech intelligibility, `audio` fidelity; default `audio`, as Discord clients use. */
  application?: 'voip' | 'audio';
  /** Bits per second; libopus chooses when absent (about 96 kb/s for 48 kHz stereo). */
  bitrate?: number;
}

/** Encodes 48 kHz stereo 20 ms frames (3840 bytes, see `DiscordFramer`) into Opus packets. */
export class OpusFrameEncoder {
  #encoder: OpusScript | undefined;

  constructor(options: OpusFrameEncoderOptions = {}) {
    const application = options.application === 'voip' ? OpusScript.Application.VOIP : OpusScript.Application.AUDIO;
    this.#encoder = new OpusScript(DISCORD_SAMPLE_RATE, DISCORD_CHANNELS, application);
    if (options.bitrate !== undefined) this.#encoder.encoderCTL(SET_BITRATE, options.bitrate);
  }

  /** One Opus packet for one frame. */
  encode(frame: Buffer): Buffer {
    if (this.#encoder === undefined) throw new Error('this Opus encoder was deleted');
    if (frame.length !== DISCORD_FRAME_BYTES) throw new RangeError(`an Opus frame must be ${DISCORD_FRAME_BYTES} bytes, not ${frame.length}`);
    // opusscript wants the frame's bytes; handing it an Int16Array of the samples garbles them.
    return this.#encoder.encode(frame, DISCORD_FRAME_SAMPLES);
  }

  /** Frees the WASM encoder; later calls to `encode` fail. Safe to call twice. */
  delete(): void {
    this.#encoder?.delete();
    this.#encoder = undefined;
  }
}
