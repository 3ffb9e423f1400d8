/**
 * Voice activity detection over Discord's 20 ms frames, with libfvad (the WebRTC VAD) compiled
 * to WebAssembly: no model to download, ~130 µs a frame. It judges each frame alone, so callers
 * smooth its answers over time (turn-detector.ts); it counts broadband noise as speech.
 */
import fvad, { type FvadModule } from '@echogarden/fvad-wasm';
import { DISCORD_FRAME_SAMPLES, DISCORD_SAMPLE_RATE } from './discord-frames.js';

/** Decides whether one 20 ms frame of 48 kHz mono audio holds speech. */
export interface VoiceActivity {
  isVoiced(frame: Int16Array): boolean;
}

/**
 * How readily a frame is called speech: 0 calls the most frames speech (quality mode), 3 the
 * fewest (very aggressive, for noisy rooms). Discord clients already gate and denoise their
 * microphones, so the default is 2.
 */
export type VoiceActivityAggressiveness = 0 | 1 | 2 | 3;

/** A detector with its own state (libfvad smooths over recent frames), one per speaker. */
export interface VoiceActivityDetector extends VoiceActivity {
  /** Forgets the past frames, as after a long silence. */
  reset(): void;
  /** Frees its WebAssembly memory; the detector is unusable afterwards. */
  close(): void;
}

let loading: Promise<FvadModule> | undefined;

/** The WebAssembly module, compiled once per process however many detectors are made. */
function loadModule(): Promise<FvadModule> {
  loading ??= fvad().catch((error: unknown) => {
    loading = undefined;
    throw error;
  });
  return loading;
}

/** Makes detectors at once, for a caller that must not wait (a receive stream's first packet). */
export interface VoiceActivityDetectors {
  create(options?: { aggressiveness?: VoiceActivityAggressiveness }): VoiceActivityDetector;
}

/** Loads the WebAssembly (compiled once per process), then makes detectors synchronously. */
export async function loadVoiceActivityDetectors(): Promise<VoiceActivityDetectors> {
  const module = await loadModule();
  return { create: (options = {}) => detectorOf(module, options.aggressiveness ?? 2) };
}

/** Makes a detector; the first call in a process waits for the WebAssembly to compile. */
export async function createVoiceActivityDetector(options: { aggressiveness?: VoiceActivityAggressiveness } = {}): Promise<VoiceActivityDetector> {
  return (await loadVoiceActivityDetectors()).create(options);
}

function detectorOf(module: FvadModule, aggressiveness: VoiceActivityAggressiveness): VoiceActivityDetector {
  const instance = module._fvad_new();
  if (instance === 0) throw new Error('fvad: out of memory');
  const configure = (): boolean => module._fvad_set_mode(instance, aggressiveness) === 0 && module._fvad_set_sample_rate(instance, DISCORD_SAMPLE_RATE) === 0;
  if (!configure()) {
    module._fvad_free(instance);
    throw new RangeError(`fvad: cannot use aggressiveness ${aggressiveness} at ${DISCORD_SAMPLE_RATE} Hz`);
  }
  const buffer = module._malloc(DISCORD_FRAME_SAMPLES * 2);
  let closed = false;
  return {
    isVoiced(frame) {
      if (closed) throw new Error('fvad: the detector is closed');
      if (frame.length !== DISCORD_FRAME_SAMPLES) throw new RangeError(`fvad: a frame has ${DISCORD_FRAME_SAMPLES} samples, not ${frame.length}`);
      module.HEAP16.set(frame, buffer >> 1);
      const answer = module._fvad_process(instance, buffer, frame.length);
      if (answer < 0) throw new Error('fvad: the frame was refused');
      return answer === 1;
    },
    reset() {
      if (closed) return;
      // libfvad's reset also puts the mode and rate back to its defaults (8 kHz).
      module._fvad_reset(instance);
      configure();
    },
    close() {
      if (closed) return;
      closed = true;
      module._free(buffer);
      module._fvad_free(instance);
    },
  };
}

/** The mono frame of an interleaved stereo one (what an Opus decoder gives), by averaging. */
export function downmixStereo(interleaved: Int16Array): Int16Array {
  const mono = new Int16Array(interleaved.length >> 1);
  for (let index = 0; index < mono.length; index++) {
    mono[index] = ((interleaved[index * 2] ?? 0) + (interleaved[index * 2 + 1] ?? 0)) >> 1;
  }
  return mono;
}
