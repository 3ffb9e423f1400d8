/**
 * Waiting for the fake to reach a state without polling: the predicate runs once now and again
 * after every change the fake reports, and the wait ends on its first truthy value or a timeout.
 */
import type { DiscordState } from './state.js';
import { patient } from '../../support/patience.js';

/** Event-driven wait: the predicate runs now and after every state change, never on a timer. */
export function waitForState<T>(state: DiscordState, check: () => T | undefined | null | false, timeoutMs: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let unsubscribe: () => void = () => undefined;
    const boundMs = patient(timeoutMs);
    const timer = setTimeout(() => {
      unsubscribe();
      reject(new Error(`fake Discord: waitFor timed out after ${boundMs} ms`));
    }, boundMs);
    const evaluate = (): boolean => {
      let value: T | undefined | null | false;
      try {
        value = check();
      } catch (error) {
        clearTimeout(timer);
        unsubscribe();
        reject(error instanceof Error ? error : new Error(String(error)));
        return true;
      }
      if (value === undefined || value === null || value === false) return false;
      clearTimeout(timer);
      unsubscribe();
      resolve(value);
      return true;
    };
    if (!evaluate()) unsubscribe = state.onChange(() => void evaluate());
  });
}
