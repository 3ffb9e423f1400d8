import { describe, expect, it, vi } from 'vitest';
import { ChannelPacer } from '../../src/bot/pacing/channel-pacer.js';
import { SlidingWindow, type GlobalWindows } from '../../src/bot/pacing/global-window.js';
import { cutMarker } from '../../src/bot/replies/split-message.js';
import { type ButtonRows, MessageUneditableError, QueuePlace, type ReplyChannel, writeStreamingReply } from '../../src/bot/replies/streaming-reply.js';
import { webhookBucket } from '../../src/bot/deliveries/job-deliveries.js';

const silent = { debug() {}, info() {}, warn() {}, error() {} };

/** A channel that records what a viewer would see, with a delay per request. */
class RecordingChannel implements ReplyChannel {
  readonly id = 'channel-1';
  readonly contents = new Map<string, string[]>();
  readonly order: string[] = [];
  /** Each request: what it was and whether it carried buttons. */
  readonly requests: Array<{ kind: 'send' | 'edit'; id?: string; buttons: boolean }> = [];
  typing = 0;
  inFlight = 0;
  maxInFlight = 0;
  constructor(private readonly delayMs = 5) {}
  async sendTyping() {
    this.typing++;
  }
  async send(content: string, rows?: ButtonRows) {
    this.requests.push({ kind: 'send', buttons: rows !== undefined });
    return this.#request(async () => {
      const id = `m${this.order.length + 1}`;
      this.order.push(id);
      this.contents.set(id, [content]);
      return id;
    });
  }
  /** Messages whose edits fail as one whose persona webhook Discord keeps failing. */
  readonly uneditable = new Set<string>();
  async edit(messageId: string, content: string, rows?: ButtonRows) {
    this.requests.push({ kind: 'edit', id: messageId, buttons: rows !== undefined });
    await this.#request(async () => {
      if (this.uneditable.has(messageId)) throw new MessageUneditableError();
      this.contents.get(messageId)!.push(content);
    });
  }
  final(): string[] {
    return this.order.map((id) => this.contents.get(id)!.at(-1)!);
  }
  async #request<T>(work: () => Promise<T>): Promise<T> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    try {
      return await work();
    } finally {
      this.inFlight--;
    }
  }
}

async function* timed(pieces: string[], gapMs: number, failAfter?: number): AsyncGenerator<string> {
  for (const [index, piece] of pieces.entries()) {
    if (failAfter !== undefined && index === failAfter) throw new Error('engine died');
    await new Promise((resolve) => setTimeout(resolve, gapMs));
    yield piece;
  }
}

const explain = (error: unknown) => `⚠️ The reply stopped: ${(error as Error).message}.`;

describe('writeStreamingReply', () => {
  it("shows a waiting reply's place in the engine's queue, then replaces it with the words", async () => {
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 1, maxIntervalMs: 1000 });
    const place = new QueuePlace();
    let release: () => void = () => {};
    const started = new Promise<void>((resolve) => (release = resolve));
    async function* queued(): AsyncGenerator<string> {
      place.update(2);
      await expect.poll(() => channel.final()).toEqual(['⏳ Waiting for the model: 2 ahead.']);
      place.update(0);
      await expect.poll(() => channel.final()).toEqual(['⏳ Waiting for the model: next in line.']);
      await started;
      yield 'Here I am, ';
      yield 'at last.';
    }
    const writing = writeStreamingReply(channel, queued(), { pacer, logger: silent, explain, place });
    await expect.poll(() => channel.contents.get('m1')?.length ?? 0).toBe(2);
    release();
    await writing;
    expect(channel.order).toEqual(['m1']);
    expect(channel.final()).toEqual(['Here I am, at last.']);
    expect(channel.contents.get('m1')!.slice(0, 2)).toEqual(['⏳ Waiting for the model: 2 ahead.', '⏳ Waiting for the model: next in line.']);
  });

  it('puts the final buttons on the last message with the final text, in one request', async () => {
    const rows: ButtonRows = [{ type: 1, components: [{ type: 2, style: 2, custom_id: 'again', emoji: { name: '🔄' } }] }];
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 1, maxIntervalMs: 1000 });
    const long = 'x'.repeat(1990);
    await writeStreamingReply(channel, timed([long, ' and the end.'], 20), { pacer, logger: silent, explain, finalButtons: rows });
    expect(channel.order).toHaveLength(2);
    expect(channel.final().join(' ')).toBe(`${long} and the end.`);
    const withButtons = channel.requests.filter((request) => request.buttons);
    // Only the last message carries them, and only its last request, which set its final text.
    expect(withButtons).toHaveLength(1);
    expect(channel.requests.at(-1)).toEqual(withButtons[0]);
    expect(withButtons[0]!.id ?? channel.order.at(-1)).toBe(channel.order.at(-1));
    // Even when the final text is already shown, the buttons still come in one last edit.
    const shown = new RecordingChannel(1);
    await writeStreamingReply(shown, (async function* () {
      yield 'Done.';
      await new Promise((resolve) => setTimeout(resolve, 50));
    })(), { pacer, logger: silent, explain, finalButtons: rows, cursor: '' });
    expect(shown.requests).toEqual([{ kind: 'send', buttons: false }, { kind: 'edit', id: 'm1', buttons: true }]);
  });

  it('shows typing while the first words are slow, grows one message with a cursor, and ends with exactly the text', async () => {
    const channel = new RecordingChannel();
    const pacer = new ChannelPacer({ baseIntervalMs: 40, maxIntervalMs: 1000 });
    const words = Array.from({ length: 30 }, (_, index) => `word${index} `);
    async function* slowStart() {
      await new Promise((resolve) => setTimeout(resolve, 80));
      yield* timed(words, 10);
    }
    const result = await writeStreamingReply(channel, slowStart(), { pacer, logger: silent, explain, typingDelayMs: 20 });
    expect(channel.typing).toBeGreaterThanOrEqual(1);
    expect(channel.order).toHaveLength(1);
    const versions = channel.contents.get('m1')!;
    expect(versions.at(-1)).toBe(words.join('').trimEnd());
    expect(versions.slice(0, -1).every((version) => version.endsWith(' ▌'))).toBe(true);
    // Paced and merged: far fewer edits than pieces, each a longer prefix of the reply.
    expect(versions.length).toBeGreaterThan(2);
    expect(versions.length).toBeLessThan(words.length / 2);
    for (const version of versions) expect(words.join('').startsWith(version.replace(/ ▌$/, ''))).toBe(true);
    expect(channel.maxInFlight).toBe(1);
    expect(result.messageIds).toEqual(['m1']);
  });

  it('keeps at most one request in flight even when Discord is slower than the pieces', async () => {
    const channel = new RecordingChannel(60);
    const pacer = new ChannelPacer({ baseIntervalMs: 1, maxIntervalMs: 1000 });
    const pieces = Array.from({ length: 100 }, (_, index) => `${index} `);
    await writeStreamingReply(channel, timed(pieces, 2), { pacer, logger: silent, explain });
    expect(channel.maxInFlight).toBe(1);
    expect(channel.final()).toEqual([pieces.join('').trimEnd()]);
    expect(channel.contents.get('m1')!.length).toBeLessThan(20);
  });

  it('continues past 2,000 characters in new messages, none over the limit', async () => {
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    const sentence = 'The lighthouse keeper counted the ships as they passed the point. ';
    const pieces = Array.from({ length: 100 }, () => sentence);
    await writeStreamingReply(channel, timed(pieces, 1), { pacer, logger: silent, explain });
    const final = channel.final();
    expect(final.length).toBe(4);
    for (const versions of channel.contents.values()) expect(versions.every((version) => version.length <= 2000)).toBe(true);
    expect(final.every((content) => !content.endsWith('▌'))).toBe(true);
    expect(final.join(' ')).toBe(pieces.join('').trimEnd());
  });

  it('keeps within a channel’s number of messages, the last cut with the marker, still reading (and answering) the whole reply', async () => {
    const channel = Object.assign(new RecordingChannel(1), { maxMessages: 2 });
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    const pieces = Array.from({ length: 200 }, (_, index) => `Ship ${index} passed the point. `);
    const result = await writeStreamingReply(channel, timed(pieces, 1), { pacer, logger: silent, explain });
    const final = channel.final();
    expect(final).toHaveLength(2);
    expect(final[1]!.endsWith(cutMarker)).toBe(true);
    for (const versions of channel.contents.values()) expect(versions.every((version) => version.length <= 2000)).toBe(true);
    expect(pieces.join('').startsWith(`${final[0]} ${final[1]!.slice(0, -cutMarker.length)}`)).toBe(true);
    expect(result.text).toBe(pieces.join(''));
  });

  it('tells where a reply of several messages shows before its buttons go on, and a reply of one not at all', async () => {
    const rows: ButtonRows = [{ type: 1, components: [{ type: 2, style: 2, custom_id: 'again', emoji: { name: '🔄' } }] }];
    const pacer = new ChannelPacer({ baseIntervalMs: 1, maxIntervalMs: 1000 });
    // The whole reply at once: its last message is first posted at the end, without the buttons.
    const channel = new RecordingChannel(1);
    const told: Array<{ ids: readonly string[]; requestsBefore: number }> = [];
    const beforeFinalButtons = async (ids: readonly string[]) => void told.push({ ids: [...ids], requestsBefore: channel.requests.length });
    await writeStreamingReply(channel, timed(['x'.repeat(1990) + ' and the end.'], 1), { pacer, logger: silent, explain, finalButtons: rows, beforeFinalButtons });
    expect(told).toEqual([{ ids: ['m1', 'm2'], requestsBefore: 2 }]);
    expect(channel.requests).toEqual([{ kind: 'send', buttons: false }, { kind: 'send', buttons: false }, { kind: 'edit', id: 'm2', buttons: true }]);
    // Grown while streaming: no request more than without being told.
    const grown = new RecordingChannel(1);
    told.length = 0;
    await writeStreamingReply(grown, timed(['x'.repeat(1990), ' and the end.'], 20), { pacer, logger: silent, explain, finalButtons: rows, beforeFinalButtons });
    expect(told.map((each) => each.ids)).toEqual([['m1', 'm2']]);
    expect(grown.requests.filter((request) => request.buttons)).toEqual([grown.requests.at(-1)]);
    expect(grown.requests.filter((request) => request.kind === 'send')).toHaveLength(2);
    told.length = 0;
    await writeStreamingReply(new RecordingChannel(1), timed(['Short.'], 1), { pacer, logger: silent, explain, finalButtons: rows, beforeFinalButtons });
    expect(told).toEqual([]);
  });

  it('keeps every message within a channel’s own shorter limit (room for a speaker’s name)', async () => {
    const channel = Object.assign(new RecordingChannel(1), { maxLength: 1990 });
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    // Short words, so a split at Discord's 2,000 would land within the last ten characters.
    const pieces = Array.from({ length: 120 }, () => 'ship ship ship ship ship ');
    await writeStreamingReply(channel, timed(pieces, 1), { pacer, logger: silent, explain });
    for (const versions of channel.contents.values()) expect(versions.every((version) => version.length <= 1990)).toBe(true);
    expect(Math.max(...channel.final().map((content) => content.length))).toBeGreaterThan(1980);
    expect(channel.final().join(' ')).toBe(pieces.join('').trimEnd());
  });

  it('goes on after a message that can no longer be edited from the words it shows, repeating none, and asks it once more to drop its cursor', async () => {
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    const words = Array.from({ length: 40 }, (_, index) => `word${index} `);
    let given = 0;
    async function* stuckHalfway() {
      for (const word of words) {
        // Halfway, the first message's edits start failing for good.
        if (++given === 20) channel.uneditable.add('m1');
        await new Promise((resolve) => setTimeout(resolve, 2));
        yield word;
      }
    }
    const result = await writeStreamingReply(channel, stuckHalfway(), { pacer, logger: silent, explain });
    const [first, ...rest] = channel.final();
    expect(first!.endsWith(' ▌')).toBe(true);
    expect(rest.length).toBeGreaterThan(0);
    expect([first!.replace(/\s*▌$/, ''), ...rest].join(' ')).toBe(words.join('').trimEnd());
    expect(result.messageIds).toEqual(channel.order);
    // The last request: the stuck message without its cursor (refused here, so it stays).
    expect(channel.requests.at(-1)).toEqual({ kind: 'edit', id: 'm1', buttons: false });
  });

  it('ends a failed reply with a visible explanation under the text so far', async () => {
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    const result = await writeStreamingReply(channel, timed(['Half ', 'a ', 'thought'], 5, 2), { pacer, logger: silent, explain });
    expect(channel.final()).toEqual(['Half a\n\n⚠️ The reply stopped: engine died.']);
    expect((result.failure as Error).message).toBe('engine died');
  });

  it('explains a failure before any words in a message of its own', async () => {
    const channel = new RecordingChannel(1);
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000 });
    await writeStreamingReply(channel, timed(['never'], 5, 0), { pacer, logger: silent, explain });
    expect(channel.final()).toEqual(['⚠️ The reply stopped: engine died.']);
  });
});

describe('ChannelPacer', () => {
  it('keeps ordinary edits across all channels within the global budget', () => {
    let now = 0;
    const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, globalPerSecond: 3, now: () => now });
    expect([pacer.claim('a'), pacer.claim('b'), pacer.claim('c')]).toEqual([0, 0, 0]);
    expect(pacer.claim('d')).toBe(1000);
    now = 400;
    expect(pacer.claim('d')).toBe(600);
    now = 1000;
    expect(pacer.claim('d')).toBe(0);
  });

  it('keeps webhook edits in a budget of their own (Discord limits them per IP address, not per token)', () => {
    let now = 0;
    const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, globalPerSecond: 2, unauthenticatedPerSecond: 1, now: () => now });
    expect([pacer.claim('a'), pacer.claim('b')]).toEqual([0, 0]);
    expect(pacer.claim('c')).toBe(1000);
    // The token's budget is spent; a webhook's edit still goes, and only one.
    expect(pacer.claim(webhookBucket('1', 'x'))).toBe(0);
    expect(pacer.claim(webhookBucket('2', 'y'))).toBe(1000);
    now = 1000;
    expect([pacer.claim('c'), pacer.claim(webhookBucket('2', 'y'))]).toEqual([0, 0]);
  });

  it('lets ordinary edits into the global window of their kind only while it has room, first messages before edits', async () => {
    let now = 0;
    const windows: GlobalWindows = { token: new SlidingWindow(10, 1000, () => now), unauthenticated: new SlidingWindow(10, 1000, () => now) };
    const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, windows, keepFree: 4, now: () => now });
    // Edits leave 4 of the token window's 10 places free: 6 go.
    expect(Array.from({ length: 7 }, (_, index) => pacer.claim(`e${index}`))).toEqual([0, 0, 0, 0, 0, 0, 1000]);
    // A reply's first message leaves only 2: two more may go.
    expect([pacer.claim('first-1', true), pacer.claim('first-2', true), pacer.claim('first-3', true)]).toEqual([0, 0, 1000]);
    // Webhook edits count in the other window, untouched so far.
    expect(pacer.claim(webhookBucket('1', 'x'))).toBe(0);
    // Requests that must go (final edits, commands) fill the token window and one waits: no edit passes it.
    for (let index = 0; index < 10; index++) void windows.token.acquire();
    now = 1000;
    expect(pacer.claim('e-late')).toBeGreaterThan(0);
    expect(pacer.claim('first-late', true)).toBeGreaterThan(0);
  });

  it('lets a webhook edit count on the token’s window when the address’s is crowded and webhook requests may carry the token', () => {
    let now = 0;
    const make = (spill: boolean): GlobalWindows => ({
      token: new SlidingWindow(10, 1000, () => now),
      unauthenticated: new SlidingWindow(10, 1000, () => now),
      ...(spill ? { spill: { authorization: () => 'Bot t', reserve: 2 } } : {}),
    });
    for (const spill of [false, true]) {
      const windows = make(spill);
      const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, windows, keepFree: 4, now: () => now });
      const claims = Array.from({ length: 13 }, (_, index) => pacer.claim(webhookBucket(String(index), 'x')));
      // 6 places of the address's window; with the token, 4 more of the token's (2 more kept for the bot), then none.
      const granted = claims.filter((wait) => wait === 0).length;
      expect(granted).toBe(spill ? 10 : 6);
      expect(claims.at(-1)).toBeGreaterThan(0);
      // The bot's own edits still find what the token's window has left after those.
      expect(Array.from({ length: 7 }, (_, index) => pacer.claim(`own-${index}`)).filter((wait) => wait === 0).length).toBe(spill ? 2 : 6);
    }
  });

  it('sends a reply that could not appear before its end once, with its final text, while the window is crowded', async () => {
    const window = new SlidingWindow(1, 60_000);
    (await window.acquire())();
    const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000, windows: { token: window, unauthenticated: window }, keepFree: 0 });
    const channel = new RecordingChannel(1);
    const rows: ButtonRows = [{ type: 1, components: [{ type: 2, style: 2, custom_id: 'again', label: '🔄' }] }];
    await writeStreamingReply(channel, timed(['Hello ', 'there ', 'friend.'], 10), { pacer, logger: silent, explain, finalButtons: rows });
    expect(channel.requests).toEqual([{ kind: 'send', buttons: true }]);
    expect(channel.final()).toEqual(['Hello there friend.']);
  });

  it('holds the typing indicator back while the global window is crowded, and shows it once there is room', async () => {
    vi.useFakeTimers();
    try {
      const window = new SlidingWindow(2, 1000);
      (await window.acquire())();
      (await window.acquire())();
      const pacer = new ChannelPacer({ baseIntervalMs: 5, maxIntervalMs: 1000, windows: { token: window, unauthenticated: window }, keepFree: 0 });
      const channel = new RecordingChannel(1);
      // The first words take 1.5 s; the indicator would be due after 300 ms, but the window is full for 1 s.
      const crowded = writeStreamingReply(channel, timed(['Slow ', 'words.'], 1500), { pacer, logger: silent, explain, typingDelayMs: 300 });
      await vi.advanceTimersByTimeAsync(900);
      expect(channel.typing).toBe(0);
      // The window empties: the indicator goes out before the first words.
      await vi.advanceTimersByTimeAsync(200);
      expect(channel.typing).toBe(1);
      await vi.advanceTimersByTimeAsync(5000);
      await crowded;
      expect(channel.final()).toEqual(['Slow words.']);
    } finally {
      vi.useRealTimers();
    }
  });

  it('takes a part of the budget below one edit a second as one edit per longer window', () => {
    let now = 0;
    // 40 a second split over 80 shards: one edit every 2 s in each.
    const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, globalPerSecond: 0.5, now: () => now });
    expect(pacer.claim('a')).toBe(0);
    expect(pacer.claim('b')).toBe(2000);
    now = 2000;
    expect(pacer.claim('b')).toBe(0);
    expect(() => new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, globalPerSecond: 0 })).toThrow(RangeError);
  });

  it('spaces edits per channel, follows the bucket headers and backs off on 429', () => {
    let now = 0;
    const pacer = new ChannelPacer({ baseIntervalMs: 1000, maxIntervalMs: 8000, now: () => now });
    expect(pacer.waitFor('a')).toBe(0);
    pacer.sent('a');
    expect(pacer.waitFor('a')).toBe(1000);
    expect(pacer.waitFor('b')).toBe(0);
    // One edit left for the next 4 s: spread it out.
    pacer.observe('a', { remaining: 1, resetAfterMs: 4000 });
    expect(pacer.waitFor('a')).toBe(4000);
    // Bucket exhausted: wait for the reset.
    now = 5000;
    pacer.sent('a');
    pacer.observe('a', { remaining: 0, resetAfterMs: 4500 });
    expect(pacer.waitFor('a')).toBe(4500);
    // A 429 doubles the spacing, up to the maximum, and it decays as edits succeed.
    pacer.rateLimited('a', 300);
    pacer.rateLimited('a', 300);
    pacer.rateLimited('a', 300);
    pacer.rateLimited('a', 300);
    expect(pacer.intervalOf('a')).toBe(8000);
    for (let count = 0; count < 20; count++) pacer.observe('a', { remaining: 4, resetAfterMs: 100 });
    expect(pacer.intervalOf('a')).toBe(1000);
    expect(pacer.intervalOf('b')).toBe(1000);
  });

  it('paces by the channel’s pacing key when it has one: two threads on one webhook share its spacing', async () => {
    const words = Array.from({ length: 40 }, (_, index) => `w${index} `);
    /** Messages shown (first post, edits, final) by two threads streaming at once, keyed apart or together. */
    const versionsOfTwo = async (sharedKey: boolean): Promise<number> => {
      const pacer = new ChannelPacer({ baseIntervalMs: 100, maxIntervalMs: 1000 });
      const threads = [0, 1].map((index) => Object.assign(new RecordingChannel(1), { id: `thread-${index}`, ...(sharedKey ? { pacingKey: () => 'webhook:1/token' } : {}) }));
      await Promise.all(threads.map((thread) => writeStreamingReply(thread, timed(words, 20), { pacer, logger: silent, explain })));
      expect(threads.every((thread) => thread.final()[0] === words.join('').trimEnd())).toBe(true);
      return threads.reduce((sum, thread) => sum + thread.contents.get('m1')!.length, 0);
    };
    const [together, apart] = [await versionsOfTwo(true), await versionsOfTwo(false)];
    expect(together).toBeLessThan(apart * 0.75);
  });
});
