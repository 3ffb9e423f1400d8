import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../src/bot/keyed-lock.js';

describe('KeyedLock', () => {
  it('runs tasks on one name one at a time, in the order they asked', async () => {
    const lock = new KeyedLock();
    const events: string[] = [];
    let running = 0;
    const tasks = [30, 0, 10, 0, 20].map((delay, index) =>
      lock.run('conversation', async () => {
        running += 1;
        expect(running).toBe(1);
        events.push(`start ${index}`);
        await sleep(delay);
        events.push(`end ${index}`);
        running -= 1;
        return index;
      }),
    );
    expect(await Promise.all(tasks)).toEqual([0, 1, 2, 3, 4]);
    expect(events).toEqual([0, 1, 2, 3, 4].flatMap((index) => [`start ${index}`, `end ${index}`]));
  });

  it('runs tasks on different names concurrently', async () => {
    const lock = new KeyedLock();
    let running = 0;
    let most = 0;
    await Promise.all(
      ['a', 'b', 'c'].map((name) =>
        lock.run(name, async () => {
          running += 1;
          most = Math.max(most, running);
          await sleep(10);
          running -= 1;
        }),
      ),
    );
    expect(most).toBe(3);
  });

  it('releases the lock when a task throws, and passes the error on', async () => {
    const lock = new KeyedLock();
    const failing = lock.run('name', async () => {
      await sleep(5);
      throw new Error('task failed');
    });
    const throwingSynchronously = lock.run('name', () => {
      throw new Error('thrown at once');
    });
    const next = lock.run('name', async () => 'ran');
    await expect(failing).rejects.toThrow('task failed');
    await expect(throwingSynchronously).rejects.toThrow('thrown at once');
    expect(await next).toBe('ran');
  });

  it('forgets names once they are idle, so memory does not grow with names used', async () => {
    const lock = new KeyedLock();
    const work = Array.from({ length: 1_000 }, (_, index) => lock.run(`name ${index % 100}`, async () => index));
    expect(lock.size).toBe(100);
    await Promise.all(work);
    expect(lock.size).toBe(0);
    await lock.run('failing', () => Promise.reject(new Error('no'))).catch(() => undefined);
    expect(lock.size).toBe(0);
  });

  it('keeps a read-modify-write exact under 100 concurrent callers', async () => {
    const lock = new KeyedLock();
    let counter = 0;
    await Promise.all(
      Array.from({ length: 100 }, () =>
        lock.run('counter', async () => {
          const read = counter;
          await sleep(0);
          counter = read + 1;
        }),
      ),
    );
    expect(counter).toBe(100);
  });
});
