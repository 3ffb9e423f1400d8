/**
 * From Opus packets to turns: the WebRTC VAD on real speech, one decoder per person, and a
 * turn's audio as speech-to-text takes it.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { DISCORD_FRAME_SAMPLES } from '../../src/audio/discord-frames.js';
import { durationMs } from '../../src/audio/pcm.js';
import { resample } from '../../src/audio/resample.js';
import { SpeakerListener, speechToTextAudio } from '../../src/audio/speaker-listener.js';
import type { Turn, TurnEvent } from '../../src/audio/turn-detector.js';
import { createVoiceActivityDetector } from '../../src/audio/voice-activity.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { encodeOpusFrames } from '../fakes/discord-voice/speech.js';
import { medianPitch } from '../speech/signal-measures.js';

const engine = createEspeakSpeechEngine();
afterAll(() => engine.close());

const SILENCE_FRAME = Buffer.from([0xf8, 0xff, 0xfe]);
const turnsOf = (events: TurnEvent[]): Turn[] => events.flatMap((event) => (event.type === 'turn' ? [event.turn] : []));

describe('voice activity detector', () => {
  it('hears speech in espeak frames and none in silence, and keeps working after a reset', async () => {
    const detector = await createVoiceActivityDetector({ aggressiveness: 3 });
    try {
      const speech = resample(await engine.synthesize({ text: 'Hello there, how are you?', voiceId: 'en-us' }), 48_000);
      let voiced = 0;
      let frames = 0;
      for (let start = 0; start + DISCORD_FRAME_SAMPLES <= speech.samples.length; start += DISCORD_FRAME_SAMPLES, frames++) {
        if (detector.isVoiced(speech.samples.subarray(start, start + DISCORD_FRAME_SAMPLES))) voiced++;
      }
      expect(voiced / frames).toBeGreaterThan(0.7);
      detector.reset();
      expect(detector.isVoiced(new Int16Array(DISCORD_FRAME_SAMPLES))).toBe(false);
      expect(() => detector.isVoiced(new Int16Array(100))).toThrow(RangeError);
    } finally {
      detector.close();
    }
  });
});

describe('speaker listener', () => {
  it('decodes each person with their own decoder: interleaved packets make two turns, each with its own voice', async () => {
    const [low, high] = await Promise.all([
      engine.synthesize({ text: 'I am the first person speaking now.', voiceId: 'en-us+m3;pitch=20' }),
      engine.synthesize({ text: 'And I am the second one, talking at the same time.', voiceId: 'en-us+f3;pitch=80' }),
    ]);
    const listeners = [new SpeakerListener(await createVoiceActivityDetector()), new SpeakerListener(await createVoiceActivityDetector())];
    const packets = [encodeOpusFrames(low).opus, encodeOpusFrames(high).opus].map((opus) => [...opus, ...Array.from({ length: 5 }, () => SILENCE_FRAME)]);
    const events: TurnEvent[][] = [[], []];
    let now = 0;
    for (let index = 0; index < Math.max(packets[0]!.length, packets[1]!.length); index++, now += 20) {
      for (const person of [0, 1]) {
        const packet = packets[person]![index];
        events[person]!.push(...(packet ? listeners[person]!.receive(packet, now) : listeners[person]!.tick(now)));
      }
    }
    for (let waited = 0; waited < 1000; waited += 20, now += 20) for (const person of [0, 1]) events[person]!.push(...listeners[person]!.tick(now));

    const [first, second] = events.map(turnsOf);
    expect(first).toHaveLength(1);
    expect(second).toHaveLength(1);
    expect(Math.abs(durationMs(first![0]!.audio) - durationMs(low))).toBeLessThan(900);
    expect(Math.abs(durationMs(second![0]!.audio) - durationMs(high))).toBeLessThan(900);
    expect(medianPitch(second![0]!.audio.samples, 48_000)).toBeGreaterThan(1.3 * medianPitch(first![0]!.audio.samples, 48_000));

    const forSpeechToText = speechToTextAudio(first![0]!.audio);
    expect(forSpeechToText.sampleRate).toBe(16_000);
    expect(durationMs(forSpeechToText)).toBeCloseTo(durationMs(first![0]!.audio), -1);
    for (const listener of listeners) listener.close(now);
  });

  it('skips a packet the decoder refuses and returns a turn under way when closed', async () => {
    const listener = new SpeakerListener(await createVoiceActivityDetector());
    const speech = encodeOpusFrames(await engine.synthesize({ text: 'Goodbye everyone, I am leaving.', voiceId: 'en-us' })).opus;
    const events: TurnEvent[] = [];
    let now = 0;
    for (const packet of speech) events.push(...listener.receive(packet, (now += 20)));
    events.push(...listener.receive(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff]), (now += 20)));
    expect(turnsOf(events)).toHaveLength(0);
    const closing = listener.close(now);
    expect(turnsOf(closing)).toHaveLength(1);
    expect(listener.receive(speech[0]!, now)).toEqual([]);
  });
});
