import OpusScript from 'opusscript';
import { describe, expect, it, vi } from 'vitest';
import { liveOpusInstances, opusEncoderRoom, opusInstancesReserved, reserveOpusMemory } from '../../src/audio/opus-memory.js';
import { OpusReserveFull, SpeakerListener } from '../../src/audio/speaker-listener.js';
import { createVoiceActivityDetector } from '../../src/audio/voice-activity.js';

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

describe('Opus decoders counted against the reserve', () => {
  it('refuses a listener past the reserve (closing its detector) and counts a closed one as given back', async () => {
    reserveOpusMemory();
    const before = liveOpusInstances();
    const listeners: SpeakerListener[] = [];
    try {
      for (let made = 0; made < opusInstancesReserved; made++) {
        const detector = await createVoiceActivityDetector();
        const close = vi.spyOn(detector, 'close');
        try {
          listeners.push(new SpeakerListener(detector));
        } catch (error) {
          expect(error).toBeInstanceOf(OpusReserveFull);
          expect(close).toHaveBeenCalled();
          break;
        }
      }
      // Room is left for the encoders of replies playing, which are not counted.
      expect(liveOpusInstances()).toBe(opusInstancesReserved - opusEncoderRoom);
      expect(listeners.length).toBe(opusInstancesReserved - opusEncoderRoom - before);
    } finally {
      for (const listener of listeners) listener.close(0);
    }
    expect(liveOpusInstances()).toBe(before);
  });
});
