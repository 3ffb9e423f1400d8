import { describe, expect, it } from 'vitest';
import { SlotPool } from '../../../src/engines/chat/embedded/slot-pool.js';

describe('SlotPool', () => {
  it('lends free slots at once, then serves waiters in arrival order, telling each its place', async () => {
    const pool = new SlotPool(['a', 'b']);
    const first = await pool.acquire();
    const second = await pool.acquire();
    expect(new Set([first, second])).toEqual(new Set(['a', 'b']));

    const places: Record<string, number[]> = { third: [], fourth: [] };
    const order: string[] = [];
    const third = pool.acquire({ onQueued: (ahead) => places.third!.push(ahead) }).then((slot) => (order.push('third'), slot));
    const fourth = pool.acquire({ onQueued: (ahead) => places.fourth!.push(ahead) }).then((slot) => (order.push('fourth'), slot));
    expect(pool.waiting).toBe(2);
    expect(places).toEqual({ third: [0], fourth: [1] });

    pool.release(first);
    expect(await third).toBe(first);
    expect(places.fourth).toEqual([1, 0]);
    pool.release(second);
    expect(await fourth).toBe(second);
    expect(order).toEqual(['third', 'fourth']);
    expect(pool.busy).toBe(2);
  });

  it('takes a waiter that leaves out of the queue at once; the ones behind move up', async () => {
    const pool = new SlotPool(['only']);
    const held = await pool.acquire();
    const leaving = new AbortController();
    const reason = new Error('client left');
    const places: number[] = [];
    const gone = pool.acquire({ signal: leaving.signal });
    const staying = pool.acquire({ onQueued: (ahead) => places.push(ahead) });
    leaving.abort(reason);
    await expect(gone).rejects.toBe(reason);
    expect(places).toEqual([1, 0]);
    expect(pool.waiting).toBe(1);
    pool.release(held);
    expect(await staying).toBe('only');
  });

  it('gives the free slot whose cache scores highest for the request', async () => {
    const pool = new SlotPool([{ name: 'ana' }, { name: 'bo' }, { name: 'cy' }]);
    const slot = await pool.acquire({ affinity: (candidate) => (candidate.name === 'bo' ? 5 : 1) });
    expect(slot.name).toBe('bo');
  });

  it('refuses a request whose signal is already aborted, and every waiter when closing', async () => {
    const pool = new SlotPool([1]);
    await expect(pool.acquire({ signal: AbortSignal.abort(new Error('late')) })).rejects.toThrow('late');
    await pool.acquire();
    const waiting = pool.acquire();
    pool.rejectAll(new Error('closing'));
    await expect(waiting).rejects.toThrow('closing');
  });
});

describe('SlotPool: background work', () => {
  it('serves every waiting request before background work, whatever came first', async () => {
    const pool = new SlotPool(['only']);
    const held = await pool.acquire();
    const order: string[] = [];
    const places: Record<string, number[]> = { learning: [], reply: [] };
    const learning = pool.acquire({ background: true, onQueued: (ahead) => places.learning!.push(ahead) }).then((slot) => (order.push('learning'), slot));
    const reply = pool.acquire({ onQueued: (ahead) => places.reply!.push(ahead) }).then((slot) => (order.push('reply'), slot));
    // The reply that came later goes first; the learning hears it is one further back.
    expect(places).toEqual({ learning: [0, 1], reply: [0] });
    pool.release(held);
    pool.release(await reply);
    await learning;
    expect(order).toEqual(['reply', 'learning']);
  });
});
