import { randomUUID } from 'node:crypto';
import type { Clock, IdGenerator } from './ports.js';

/**
 * The wall clock, with microsecond timestamps that never repeat or go backwards within
 * the process, so records created in order sort in order even within one millisecond.
 */
export function createSystemClock(): Clock {
  let lastMicros = 0;
  return {
    nowMillis: () => Date.now(),
    nowMicros: () => {
      const micros = Math.floor((performance.timeOrigin + performance.now()) * 1000);
      lastMicros = Math.max(micros, lastMicros + 1);
      return lastMicros;
    },
  };
}

export function createRandomIds(): IdGenerator {
  return { uuid: () => randomUUID() };
}

/** Formats microseconds since the epoch as ISO 8601 UTC with six fractional digits. */
export function isoMicros(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const fraction = String(micros % 1_000_000).padStart(6, '0');
  return `${new Date(millis).toISOString().slice(0, 19)}.${fraction}Z`;
}
