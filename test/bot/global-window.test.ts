import { describe, expect, it } from 'vitest';
import { SlidingWindow, withGlobalWindow } from '../../src/bot/global-window.js';

describe('SlidingWindow', () => {
  it('never lets more than the limit out in any window, however the window is placed', async () => {
    const window = new SlidingWindow(3, 100);
    const times: number[] = [];
    await Promise.all(Array.from({ length: 10 }, () => window.acquire().then(() => times.push(performance.now()))));
    expect(times).toHaveLength(10);
    for (const start of times) {
      // Timers may fire late, never early: at most 3 within any 100 ms (1 ms for clock rounding).
      expect(times.filter((time) => time >= start && time < start + 99).length).toBeLessThanOrEqual(3);
    }
  });
});

describe('withGlobalWindow', () => {
  it('holds back requests with the bot token only; webhook and interaction routes go at once', async () => {
    const made: string[] = [];
    const makeRequest = async (url: string) => {
      made.push(url);
      return new Response('{}') as never;
    };
    const limited = withGlobalWindow(new SlidingWindow(1, 60_000), makeRequest);
    await limited('https://discord.test/api/channels/1/messages', { headers: { Authorization: 'Bot token' } });
    let second = false;
    void limited('https://discord.test/api/channels/1/messages', { headers: { Authorization: 'Bot token' } }).then(() => (second = true));
    await limited('https://discord.test/api/webhooks/2/token', { headers: { 'Content-Type': 'application/json' } });
    await limited('https://discord.test/api/interactions/3/token/callback', {});
    expect(made).toEqual(['https://discord.test/api/channels/1/messages', 'https://discord.test/api/webhooks/2/token', 'https://discord.test/api/interactions/3/token/callback']);
    expect(second).toBe(false);
  });
});
