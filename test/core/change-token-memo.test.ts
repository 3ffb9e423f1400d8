import { describe, expect, it } from 'vitest';
import { ChangeTokenMemo } from '../../src/core/change-token-memo.js';

describe('ChangeTokenMemo', () => {
  it('hands a result out again only while the token is the same', async () => {
    let token: string | undefined = '1';
    let reads = 0;
    const memo = new ChangeTokenMemo<number>(async () => token, { max: 10 });
    const read = async () => ++reads;
    expect(await memo.get('k', read)).toBe(1);
    expect(await memo.get('k', read)).toBe(1);
    token = '2';
    expect(await memo.get('k', read)).toBe(2);
    expect(await memo.get('other', read)).toBe(3);
    // No token (PostgreSQL): every call reads.
    token = undefined;
    expect(await memo.get('k', read)).toBe(4);
    expect(await memo.get('k', read)).toBe(5);
  });

  it('keeps no failure, and keeps an empty answer', async () => {
    const memo = new ChangeTokenMemo<string | undefined>(async () => 'same', { max: 10 });
    await expect(memo.get('k', async () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await memo.get('k', async () => undefined)).toBeUndefined();
    expect(await memo.get('k', async () => 'not read')).toBeUndefined();
  });

  it('forgets the least recent entries past its size', async () => {
    let reads = 0;
    const memo = new ChangeTokenMemo<string>(async () => 't', { max: 10, maxSize: 100, sizeOf: (value) => value.length });
    const big = async () => {
      reads += 1;
      return 'x'.repeat(60);
    };
    await memo.get('one', big);
    await memo.get('two', big);
    await memo.get('one', big);
    expect(reads).toBe(3);
  });
});
