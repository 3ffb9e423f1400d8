import { describe, expect, it } from 'vitest';
import { createSystemClock, isoMicros } from '../../src/core/clock.js';

describe('clock', () => {
  it('formats microseconds as ISO 8601 UTC with six fractional digits', () => {
    expect(isoMicros(Date.UTC(2026, 10, 22, 8, 32, 10) * 1000 + 123_456)).toBe('2026-11-22T08:32:10.123456Z');
    expect(isoMicros(Date.UTC(2026, 0, 1) * 1000 + 7)).toBe('2026-01-01T00:00:00.000007Z');
  });

  it('never repeats or goes back', () => {
    const clock = createSystemClock();
    let previous = clock.nowMicros();
    for (let count = 0; count < 10_000; count++) {
      const next = clock.nowMicros();
      expect(next).toBeGreaterThan(previous);
      previous = next;
    }
    expect(Math.abs(previous / 1000 - Date.now())).toBeLessThan(1000);
  });
});
