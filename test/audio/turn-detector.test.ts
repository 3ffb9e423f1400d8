/**
 * Turn-taking on real speech (espeak-ng) and synthetic coughs, judged by the real WebRTC VAD.
 * Frames are fed with the times a Discord client's packets would arrive (20 ms apart, nothing
 * in pauses), from a simulated clock: no test waits.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { DISCORD_FRAME_SAMPLES } from '../../src/audio/discord-frames.js';
import { durationMs } from '../../src/audio/pcm.js';
import { Resampler, resample } from '../../src/audio/resample.js';
import { TurnDetector, type Turn, type TurnEvent, type TurnOptions } from '../../src/audio/turn-detector.js';
import { createVoiceActivityDetector } from '../../src/audio/voice-activity.js';
import type { PcmAudio } from '../../src/core/ports.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';

const engine = createEspeakSpeechEngine();
afterAll(() => engine.close());

/**
 * espeak speech at 48 kHz in 20 ms frames, without the quiet espeak puts around it: a Discord
 * client's voice gate sends from the first sound to a little after the last.
 */
async function spoken(text: string, voiceId = 'en-us+f3'): Promise<Int16Array[]> {
  const frames = framesOf(resample(await engine.synthesize({ text, voiceId }), 48_000));
  const loud = (frame: Int16Array): boolean => frame.some((sample) => Math.abs(sample) > 300);
  return frames.slice(frames.findIndex(loud), frames.findLastIndex(loud) + 1);
}

function framesOf(pcm: PcmAudio): Int16Array[] {
  const frames: Int16Array[] = [];
  for (let start = 0; start < pcm.samples.length; start += DISCORD_FRAME_SAMPLES) {
    const frame = new Int16Array(DISCORD_FRAME_SAMPLES);
    frame.set(pcm.samples.subarray(start, start + DISCORD_FRAME_SAMPLES));
    frames.push(frame);
  }
  return frames;
}

/** A cough: broadband noise that decays over `milliseconds`. */
function cough(milliseconds: number): Int16Array[] {
  let seed = 7;
  const random = (): number => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31) * 2 - 1;
  const frames: Int16Array[] = [];
  for (let index = 0; index < milliseconds / 20; index++) {
    frames.push(Int16Array.from({ length: DISCORD_FRAME_SAMPLES }, () => Math.round(random() * 9000 * Math.exp(-index / 5))));
  }
  return frames;
}

/** Five silence frames, as a client sends after speech. */
const trailingSilence = (): Int16Array[] => Array.from({ length: 5 }, () => new Int16Array(DISCORD_FRAME_SAMPLES));

/** Drives a detector with a simulated clock, as the bot would: frames as they come, ticks between. */
class Call {
  readonly events: { event: TurnEvent; at: number }[] = [];
  now = 1000;
  constructor(readonly detector: TurnDetector) {}

  /** A stretch of transmission: frames 20 ms apart (`burst`: all at once, as the fake can send). */
  talk(frames: readonly Int16Array[], pace: 'realtime' | 'burst' = 'realtime'): this {
    for (const frame of frames) {
      this.#record(this.detector.push(frame, this.now));
      if (pace === 'realtime') this.now += 20;
    }
    return this;
  }

  /** The client sends nothing; the bot's timer ticks every 20 ms. */
  pause(milliseconds: number): this {
    for (let waited = 0; waited < milliseconds; waited += 20) {
      this.now += 20;
      this.#record(this.detector.tick(this.now));
    }
    return this;
  }

  get turns(): Turn[] {
    return this.events.flatMap(({ event }) => (event.type === 'turn' ? [event.turn] : []));
  }

  at(type: TurnEvent['type']): number[] {
    return this.events.filter(({ event }) => event.type === type).map(({ at }) => at);
  }

  #record(events: TurnEvent[]): void {
    for (const event of events) this.events.push({ event, at: this.now });
  }
}

let voiceActivity: Awaited<ReturnType<typeof createVoiceActivityDetector>>;
beforeAll(async () => {
  voiceActivity = await createVoiceActivityDetector();
});
afterAll(() => voiceActivity.close());

const call = (options: Partial<TurnOptions> = {}): Call => {
  voiceActivity.reset();
  return new Call(new TurnDetector(voiceActivity, options));
};

describe('turn detector', () => {
  it('ends a spoken sentence as one turn once the silence threshold has passed, with the audio from just before the onset', async () => {
    const sentence = await spoken('Hello there, how are you today?');
    const person = call().talk(sentence).talk(trailingSilence()).pause(1000);
    expect(person.turns).toHaveLength(1);
    const [turn] = person.turns;
    const endedAt = person.at('turn')[0]!;
    expect(endedAt - turn!.lastVoicedAt).toBeGreaterThanOrEqual(600);
    expect(endedAt - turn!.lastVoicedAt).toBeLessThanOrEqual(640);
    expect(person.at('speech-start')).toHaveLength(1);
    // The whole sentence is in the audio (its onset and pre-roll, and the silence that ended it).
    expect(durationMs(turn!.audio)).toBeGreaterThanOrEqual(sentence.length * 20 - 60);
    expect(turn!.voicedMs).toBeGreaterThan(1000);
  });

  it('keeps a pause shorter than the threshold inside one turn, and splits at a longer one', async () => {
    const [first, second] = await Promise.all([spoken('I went to the shop.'), spoken('Then I came home.')]);
    const short = call().talk(first).talk(trailingSilence()).pause(350).talk(second).talk(trailingSilence()).pause(1000);
    expect(short.turns).toHaveLength(1);
    // The pause with no packets is kept as silence in the audio.
    expect(durationMs(short.turns[0]!.audio)).toBeGreaterThan((first.length + second.length) * 20 + 300);

    const long = call().talk(first).talk(trailingSilence()).pause(900).talk(second).talk(trailingSilence()).pause(1000);
    expect(long.turns).toHaveLength(2);
  });

  it('offers the turn so far once the person has been quiet for the speculation mark, and withdraws it when they go on', async () => {
    const [first, second] = await Promise.all([spoken('I went to the shop.'), spoken('Then I came home.')]);
    const ending = call().talk(first).talk(trailingSilence()).pause(1000);
    const [offered] = ending.events.flatMap(({ event }) => (event.type === 'turn-likely' ? [event.turn] : []));
    expect(ending.at('turn-likely')).toHaveLength(1);
    expect(ending.at('turn-likely')[0]! - offered!.lastVoicedAt).toBeGreaterThanOrEqual(300);
    expect(ending.at('turn-likely')[0]! - offered!.lastVoicedAt).toBeLessThanOrEqual(320);
    // The turn that ends holds the same speech, so the offer's transcript stands for it.
    const [turn] = ending.turns;
    expect(turn!.likely).toBe(true);
    expect(turn!.voicedMs).toBe(offered!.voicedMs);
    expect(turn!.lastVoicedAt).toBe(offered!.lastVoicedAt);

    // A pause past the mark but short of the threshold: offered, withdrawn, then offered again whole.
    const resuming = call().talk(first).talk(trailingSilence()).pause(350).talk(second).talk(trailingSilence()).pause(1000);
    expect(resuming.events.map(({ event }) => event.type)).toEqual(['speech-start', 'turn-likely', 'speech-resumed', 'turn-likely', 'turn']);
    const offers = resuming.events.flatMap(({ event }) => (event.type === 'turn-likely' ? [event.turn] : []));
    expect(resuming.turns).toHaveLength(1);
    expect(resuming.turns[0]!.likely).toBe(true);
    expect(resuming.turns[0]!.voicedMs).toBe(offers[1]!.voicedMs);
    expect(durationMs(offers[1]!.audio)).toBeGreaterThan(durationMs(offers[0]!.audio) + second.length * 20);

    // Off: no offer, and the turn is not marked.
    const off = call({ speculateMs: 0 }).talk(first).talk(trailingSilence()).pause(1000);
    expect(off.at('turn-likely')).toHaveLength(0);
    expect(off.turns[0]!.likely).toBe(false);
  });

  it('times the silence by the clock when packets come in a burst', async () => {
    const sentence = await spoken('Packets can arrive all at once.');
    const person = call().talk(sentence, 'burst').talk(trailingSilence(), 'burst');
    const sentAt = person.now;
    person.pause(1000);
    expect(person.turns).toHaveLength(1);
    expect(person.at('turn')[0]! - sentAt).toBeGreaterThanOrEqual(600);
    expect(person.at('turn')[0]! - sentAt).toBeLessThanOrEqual(620);
  });

  it('drops a 150 ms cough: not a turn, and no barge-in over the character', () => {
    const person = call();
    person.detector.setCharacterSpeaking(true);
    person.pause(100).talk(cough(150)).talk(trailingSilence()).pause(1000);
    expect(person.turns).toHaveLength(0);
    expect(person.at('barge-in')).toHaveLength(0);
    expect(person.events.map(({ event }) => event.type)).toEqual(['speech-start', 'dropped']);
  });

  it('does not end a turn early at a cough in a pause', async () => {
    const [first, second] = await Promise.all([spoken('Wait a moment.'), spoken('Now I am back.')]);
    const person = call().talk(first).talk(trailingSilence()).pause(300).talk(cough(150)).talk(trailingSilence()).pause(300).talk(second).talk(trailingSilence()).pause(1000);
    expect(person.turns).toHaveLength(1);
  });

  it('barges in after about half a second of speech over the character, not for a short "yeah"', async () => {
    const [sentence, yeah] = await Promise.all([spoken('Hold on, that is not what I asked for at all.'), spoken('Yeah.')]);
    const interrupting = call();
    interrupting.detector.setCharacterSpeaking(true);
    interrupting.talk(sentence).talk(trailingSilence()).pause(1000);
    expect(interrupting.at('barge-in')).toHaveLength(1);
    const startedAt = interrupting.at('speech-start')[0]!;
    const bargedInAt = interrupting.at('barge-in')[0]!;
    expect(bargedInAt - startedAt).toBeGreaterThanOrEqual(440);
    expect(bargedInAt - startedAt).toBeLessThanOrEqual(700);
    // The interruption is still a turn: what the person said goes on to be answered.
    expect(interrupting.turns).toHaveLength(1);

    const agreeing = call();
    agreeing.detector.setCharacterSpeaking(true);
    agreeing.talk(yeah).talk(trailingSilence()).pause(1000);
    expect(agreeing.at('barge-in')).toHaveLength(0);

    const quiet = call();
    quiet.talk(sentence).talk(trailingSilence()).pause(1000);
    expect(quiet.at('barge-in')).toHaveLength(0);
  });

  it('cuts a turn at the maximum length and goes on listening', async () => {
    const sentence = await spoken('This goes on and on, and it keeps on going for quite a while.');
    const person = call({ maximumTurnMs: 1000 }).talk(sentence).talk(trailingSilence()).pause(1000);
    const cuts = person.turns.filter((turn) => turn.cut);
    expect(cuts.length).toBeGreaterThanOrEqual(2);
    for (const turn of cuts) expect(durationMs(turn.audio)).toBeLessThanOrEqual(1000);
    expect(person.turns.at(-1)!.cut).toBe(false);
  });

  it('makes each turn’s 16 kHz audio as its frames arrive: the same as converting the whole turn, offers and cut turns included', async () => {
    const [first, second] = await Promise.all([spoken('I went to the shop.'), spoken('Then I came home.')]);
    const person = call({ maximumTurnMs: 1500 }).talk(first).talk(trailingSilence()).pause(350).talk(second).talk(trailingSilence()).pause(1000);
    const offers = person.events.flatMap(({ event }) => (event.type === 'turn-likely' ? [event.turn] : []));
    expect(person.turns.some((turn) => turn.cut)).toBe(true);
    expect(offers.length).toBeGreaterThan(0);
    for (const turn of [...person.turns, ...offers]) {
      const whole = resample(turn.audio, 16_000);
      expect(turn.speech.sampleRate).toBe(16_000);
      // An ended turn's is the whole conversion; an offer's lacks only the tail the filter still waits on (~2 ms).
      if (person.turns.includes(turn)) expect(turn.speech.samples).toEqual(whole.samples);
      else {
        expect(whole.samples.length - turn.speech.samples.length).toBeLessThanOrEqual(48);
        expect(turn.speech.samples).toEqual(whole.samples.subarray(0, turn.speech.samples.length));
      }
    }
  });

  it('never resamples a whole turn: a 30 s turn is converted one 20 ms frame at a time, none of it when it ends or is offered', async () => {
    const sentence = await spoken('This goes on and on, and it keeps on going for quite a while.');
    const frames = Array.from({ length: Math.ceil(30_000 / (sentence.length * 20)) }, () => sentence).flat();
    const pushed = vi.spyOn(Resampler.prototype, 'push');
    try {
      const person = call({ maximumTurnMs: 60_000 }).talk(frames);
      const during = pushed.mock.calls.length;
      person.talk(trailingSilence()).pause(1000);
      expect(person.turns).toHaveLength(1);
      expect(durationMs(person.turns[0]!.speech)).toBeGreaterThan(29_000);
      expect(pushed.mock.calls.every(([samples]) => samples.length <= DISCORD_FRAME_SAMPLES)).toBe(true);
      // After the speech, only the trailing silence frames are converted, not the turn again.
      expect(pushed.mock.calls.length - during).toBeLessThanOrEqual(trailingSilence().length + 30);
    } finally {
      pushed.mockRestore();
    }
  });
});
