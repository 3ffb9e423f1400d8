import OpusScript from 'opusscript';
import { describe, expect, it } from 'vitest';
import { opusInstancesReserved, reserveOpusMemory } from '../../src/audio/opus-memory.js';

describe("opusscript's shared memory, grown once", () => {
  it('keeps an early encoder working while as many more as reserved are made after it', () => {
    reserveOpusMemory();
    const first = new OpusScript(48_000, 2, OpusScript.Application.AUDIO);
    const silence = Buffer.alloc(960 * 2 * 2);
    const later: OpusScript[] = [];
    try {
      // Without the reserve, the first encoder's views are detached after about 75 more (measured).
      for (let index = 0; index < opusInstancesReserved - 16; index++) {
        later.push(new OpusScript(48_000, 2, OpusScript.Application.AUDIO));
        expect(first.encode(silence, 960).length).toBeGreaterThan(0);
      }
    } finally {
      for (const each of later) each.delete();
      first.delete();
    }
  });
});
