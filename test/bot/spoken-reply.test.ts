/**
 * A spoken reply talked over while its first sentence's audio has not come yet: it must stop
 * at once, and tell the engine to stop, whatever the engine does.
 */
import { setImmediate } from 'node:timers/promises';
import { createAudioPlayer } from '@discordjs/voice';
import { describe, expect, it } from 'vitest';
import { SpokenReply } from '../../src/bot/voice/spoken-reply.js';
import type { Logger, PcmAudio } from '../../src/core/ports.js';

const quiet: Logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

async function* reply(): AsyncGenerator<string> {
  yield 'Once upon a time there was a harbour. ';
  yield 'It was quiet.';
}

describe('SpokenReply', () => {
  it('ends promptly when interrupted before the first audio, and aborts the synthesis it started', async () => {
    const signals: AbortSignal[] = [];
    let asked!: () => void;
    const synthesising = new Promise<void>((resolve) => (asked = resolve));
    // An engine stalled before its first audio that does not even heed the signal: only the reply can let go.
    const stalled = (_sentence: string, signal: AbortSignal): AsyncIterable<PcmAudio> => {
      signals.push(signal);
      asked();
      return (async function* () {
        await new Promise<never>(() => undefined);
      })();
    };
    const spoken = new SpokenReply(createAudioPlayer(), stalled, new AbortController(), quiet, () => undefined);

    const speaking = spoken.speak(reply());
    await synthesising;
    // Every pending continuation runs first (no time passes): the reply is now waiting on the sentence's audio.
    await setImmediate();
    expect(spoken.interrupt()).toBe(true);
    await speaking;

    expect(signals.length).toBeGreaterThan(0);
    expect(signals.every((signal) => signal.aborted)).toBe(true);
    expect(spoken.heard()).toBe('');
  });
});
