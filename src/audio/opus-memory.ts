import OpusScript from 'opusscript';

/**
 * How many Opus encoders and decoders may be alive at once in a process without the WebAssembly
 * memory growing: about 0.12 MB each. A voice call holds one decoder per person speaking and an
 * encoder per reply playing (prism-media's); ten calls of two people hold about 40.
 */
export const opusInstancesReserved = 256;

let reserved = false;
let live = 0;

/** Opus instances this process's calls hold now (decoders of people being heard). */
export function liveOpusInstances(): number {
  return live;
}

/**
 * Counts one more Opus instance against the reserve, or returns false when the reserve is
 * full: one more would grow the shared memory and break every instance already alive. The
 * caller gives it back with `releaseOpusInstance`. Encoders of replies being played
 * (prism-media's) are not counted here, so the reserve keeps room for them (`opusEncoderRoom`).
 */
export function claimOpusInstance(): boolean {
  if (live >= opusInstancesReserved - opusEncoderRoom) return false;
  live++;
  return true;
}

export function releaseOpusInstance(): void {
  live = Math.max(0, live - 1);
}

/** Instances of the reserve left to the encoders of replies playing, which are not counted (one per call). */
export const opusEncoderRoom = 64;

/**
 * Grows opusscript's WebAssembly memory once, up front. All its instances share one memory, and
 * each keeps views into it made when it was created: when a later instance makes the memory
 * grow, the earlier ones' views are detached and their next encode or decode throws
 * ("detached ArrayBuffer", "offset is out of bounds"), which with ten calls at once silenced
 * most replies. Made and freed here, the instances leave a heap that later ones reuse without
 * growing, up to `instances` alive at once. Idempotent; costs about 30 MB the first time.
 */
export function reserveOpusMemory(instances = opusInstancesReserved): void {
  if (reserved) return;
  reserved = true;
  const made: OpusScript[] = [];
  try {
    for (let index = 0; index < instances; index++) made.push(new OpusScript(48_000, 2, OpusScript.Application.AUDIO));
  } finally {
    for (const each of made) each.delete();
  }
}
