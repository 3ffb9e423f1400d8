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

describe('SlidingWindow.book', () => {
  it('lets a request that can wait ask only while places remain free and nobody waits, each booking holding its place', async () => {
    let now = 0;
    const window = new SlidingWindow(10, 1000, () => now);
    // 10 places, 3 kept free: 7 bookings in one instant, not more.
    const booked = Array.from({ length: 8 }, () => window.book(3));
    expect(booked.slice(0, 7)).toEqual([0, 0, 0, 0, 0, 0, 0]);
    expect(booked[7]).toBeGreaterThan(0);
    // The booked requests ask; their promises become places in the window.
    for (let index = 0; index < 7; index++) await window.acquire();
    expect(window.book(3)).toBeGreaterThan(0);
    // A request that must go (a final edit) still takes a kept place at once.
    await window.acquire();
    // Once the first requests age out there is room again: the wait said when.
    const wait = window.book(3);
    expect(wait).toBe(1000);
    now = 1000;
    expect(window.book(3)).toBe(0);
  });

  it('counts only on its share of the places where processes share the limit behind a proxy', () => {
    const window = new SlidingWindow(10, 1000, () => 0);
    // Half of 10 places, 1 of them kept free: 4 bookings.
    expect(Array.from({ length: 5 }, () => window.book(1, { share: 0.5 }))).toEqual([0, 0, 0, 0, 1000]);
  });

  it('counts requests waiting for the window as taking their places, and forgets promises never used', async () => {
    let now = 0;
    const window = new SlidingWindow(2, 1000, () => now);
    await window.acquire();
    await window.acquire();
    // The window is full and a third request waits in it (it sleeps on the real clock).
    void window.acquire();
    now = 5000;
    // The window has emptied, but the waiting request takes one of its 2 places: with 1 kept free, none is left.
    expect(window.book(1)).toBeGreaterThan(0);
    expect(window.book(0)).toBe(0);
    const other = new SlidingWindow(2, 1000, () => now);
    expect([other.book(0, { promiseMs: 500 }), other.book(0, { promiseMs: 500 })]).toEqual([0, 0]);
    expect(other.book(0, { promiseMs: 500 })).toBeGreaterThan(0);
    // Neither booked request ever asked: their places come back.
    now += 500;
    expect(other.book(0, { promiseMs: 500 })).toBe(0);
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
