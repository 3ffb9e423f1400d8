import { describe, expect, it } from 'vitest';
import { SlidingWindow, withGlobalWindows } from '../../src/bot/global-window.js';

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

describe('withGlobalWindows', () => {
  it('holds the token’s requests and the token-less ones in separate windows; interaction callbacks never wait', async () => {
    const made: string[] = [];
    const makeRequest = async (url: string) => {
      made.push(url);
      return new Response('{}') as never;
    };
    const limited = withGlobalWindows({ token: new SlidingWindow(1, 60_000), unauthenticated: new SlidingWindow(1, 60_000) }, makeRequest);
    const waiting: string[] = [];
    await limited('https://discord.test/api/channels/1/messages', { headers: { Authorization: 'Bot token' } });
    void limited('https://discord.test/api/channels/1/messages?second', { headers: { Authorization: 'Bot token' } }).then(() => waiting.push('token'));
    // The token's window is full; a webhook request goes out all the same (the address's window)…
    await limited('https://discord.test/api/webhooks/2/token', { headers: { 'Content-Type': 'application/json' } });
    // …and a second one waits for it, like the token's second.
    void limited('https://discord.test/api/webhooks/2/token/messages/4', { headers: {} }).then(() => waiting.push('webhook'));
    await limited('https://discord.test/api/interactions/3/token/callback', {});
    await limited('https://discord.test/api/interactions/3/token/callback?with_response=true', {});
    expect(made).toEqual([
      'https://discord.test/api/channels/1/messages',
      'https://discord.test/api/webhooks/2/token',
      'https://discord.test/api/interactions/3/token/callback',
      'https://discord.test/api/interactions/3/token/callback?with_response=true',
    ]);
    expect(waiting).toEqual([]);
  });
});
