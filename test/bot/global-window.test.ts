import { describe, expect, it } from 'vitest';
import { SlidingWindow, globalWindows, withGlobalWindows } from '../../src/bot/pacing/global-window.js';

describe('SlidingWindow', () => {
  it('never lets more than the limit out in any window, however the window is placed', async () => {
    const window = new SlidingWindow(3, 100);
    const times: number[] = [];
    await Promise.all(
      Array.from({ length: 10 }, () =>
        window.acquire().then((answered) => {
          times.push(performance.now());
          answered();
        }),
      ),
    );
    expect(times).toHaveLength(10);
    for (const start of times) {
      // Timers may fire late, never early: at most 3 within any 100 ms (1 ms for clock rounding).
      expect(times.filter((time) => time >= start && time < start + 99).length).toBeLessThanOrEqual(3);
    }
  });

  it('holds a request’s place until a window after its answer, however long it was in flight', async () => {
    const window = new SlidingWindow(1, 50);
    const first = await window.acquire();
    let secondAt: number | undefined;
    const second = window.acquire().then((answered) => {
      secondAt = performance.now();
      answered();
    });
    // The first request is slow: far past its window, its place is still held.
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(secondAt).toBeUndefined();
    expect(window.free()).toBe(-1);
    const answeredAt = performance.now();
    first();
    first();
    await second;
    // It may have reached Discord just before its answer: the next goes a whole window after that.
    expect(secondAt! - answeredAt).toBeGreaterThanOrEqual(49);
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
    const inFlight = [];
    for (let index = 0; index < 7; index++) inFlight.push(await window.acquire());
    expect(window.book(3)).toBeGreaterThan(0);
    // A request that must go (a final edit) still takes a kept place at once.
    inFlight.push(await window.acquire());
    // Requests in flight free their places a window after their answers at the soonest.
    expect(window.book(3)).toBe(1000);
    now = 200;
    for (const answered of inFlight) answered();
    // Once the first requests age out there is room again: the wait said when.
    expect(window.book(3)).toBe(1000);
    now = 1200;
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
    (await window.acquire())();
    (await window.acquire())();
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

  it('sends a webhook request with the bot token while the address’s window is full and the token’s has room past its reserve; never a callback', async () => {
    const made: Array<{ url: string; authorization: string | undefined }> = [];
    const makeRequest = async (url: string, init: { headers?: unknown }) => {
      const headers = new Headers(init.headers as Record<string, string>);
      made.push({ url, authorization: headers.get('authorization') ?? undefined });
      return new Response('{}') as never;
    };
    const windows = globalWindows(3, { windowMs: 60_000, token: () => 'secret', spillReserve: 1 });
    const limited = withGlobalWindows(windows, makeRequest as never);
    const webhook = (index: number) => limited(`https://discord.test/api/webhooks/2/token/messages/${index}`, { headers: { 'Content-Type': 'application/json' } });
    // The address's window has room: token-less, as discord.js sends them.
    for (const index of [1, 2, 3]) await webhook(index);
    // It is full and the token's is empty: the next two go with the token, counted there; its last place stays the bot's.
    await webhook(4);
    await webhook(5);
    expect(made.map((request) => request.authorization)).toEqual([undefined, undefined, undefined, 'Bot secret', 'Bot secret']);
    expect(windows.token.free()).toBe(1);
    // The sixth waits for the address's window, not for the token's reserve, which the bot's own request takes at once.
    let sixth = false;
    void webhook(6).then(() => (sixth = true));
    await limited('https://discord.test/api/channels/1/messages', { headers: { Authorization: 'Bot secret' } });
    // A callback goes at once and bare.
    await limited('https://discord.test/api/interactions/3/token/callback', {});
    expect(made.slice(5)).toEqual([
      { url: 'https://discord.test/api/channels/1/messages', authorization: 'Bot secret' },
      { url: 'https://discord.test/api/interactions/3/token/callback', authorization: undefined },
    ]);
    expect(sixth).toBe(false);
    expect(windows.unauthenticated.free()).toBe(-1);
  });

  it('keeps webhook requests token-less when it is not given the token', async () => {
    const made: Array<string | null> = [];
    const makeRequest = async (_url: string, init: { headers?: unknown }) => {
      made.push(new Headers(init.headers as Record<string, string>).get('authorization'));
      return new Response('{}') as never;
    };
    const windows = globalWindows(1, { windowMs: 60_000 });
    const limited = withGlobalWindows(windows, makeRequest as never);
    await limited('https://discord.test/api/webhooks/2/token', { headers: {} });
    let second = false;
    void limited('https://discord.test/api/webhooks/2/token', { headers: {} }).then(() => (second = true));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(second).toBe(false);
    expect(made).toEqual([null]);
    expect(windows.token.free()).toBe(1);
  });
});
