import { describe, expect, it } from 'vitest';
import { MessageSnapshots } from '../../src/core/message-snapshots.js';
import type { MessageSnapshot, StoredMessage } from '../../src/core/repositories.js';

function message(position: number, content: string): StoredMessage {
  return {
    id: `m${position}`,
    conversationId: 'c',
    position,
    content,
    mimeType: 'text/plain',
    participantId: 'a',
    participantType: 'account',
    createdMicros: position,
    file: null,
    alternatives: [{ id: `m${position}`, content, createdMicros: position }],
    chosenIndex: 0,
  };
}

/** A database stand-in: the list it holds, counting how often it is read. */
function source(initial: StoredMessage[]) {
  const state = { messages: initial, loads: 0 };
  const load = async (): Promise<MessageSnapshot> => {
    state.loads += 1;
    return { lastPosition: state.messages.at(-1)?.position ?? null, newestRevision: null, messages: state.messages.map((each) => ({ ...each })) };
  };
  return { state, load };
}

describe('MessageSnapshots', () => {
  it('reads the messages once per last position and hands out the same frozen list', async () => {
    const { state, load } = source([message(1, 'a'), message(2, 'b')]);
    const snapshots = new MessageSnapshots(load);
    const first = await snapshots.messages('c', 2);
    const second = await snapshots.messages('c', 2);
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(state.loads).toBe(1);
  });

  it('reads again when the last position moved, keeping the objects of messages it already had', async () => {
    const { state, load } = source([message(1, 'a'), message(2, 'b')]);
    const snapshots = new MessageSnapshots(load);
    const first = await snapshots.messages('c', 2);
    // Another process regenerated the reply: message 2 is replaced by message 3.
    state.messages = [message(1, 'a'), message(3, 'c')];
    const next = await snapshots.messages('c', 3);
    expect(next.map((each) => each.content)).toEqual(['a', 'c']);
    expect(next[0]).toBe(first[0]);
    expect(state.loads).toBe(2);
    // A clear: no messages, no last position.
    state.messages = [];
    expect(await snapshots.messages('c', null)).toEqual([]);
    expect(state.loads).toBe(3);
  });

  it('keeps conversations apart and forgets the least recent past its byte budget', async () => {
    const { state, load } = source([message(1, 'x'.repeat(1000))]);
    const snapshots = new MessageSnapshots(load, { maxBytes: 2000 });
    await snapshots.messages('one', 1);
    await snapshots.messages('two', 1);
    expect(state.loads).toBe(2);
    await snapshots.messages('two', 1);
    expect(state.loads).toBe(2);
    await snapshots.messages('one', 1);
    expect(state.loads).toBe(3);
  });
});
