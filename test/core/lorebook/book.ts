import type { Logger, TokenCounter } from '../../../src/core/ports.js';
import { WorkerRegexRunner } from '../../../src/engines/regex/worker-regex-runner.js';
import { type Lorebook, type LorebookEntry, type LorebookSettings, defaultLorebookEntry, defaultLorebookSettings } from '../../../src/core/lorebook/lorebook.js';

let sequence = 0;

export const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {} };

/** One runner for the lorebook tests, as a process has one; tests of refusals make their own. */
export const testRegexes = new WorkerRegexRunner({ boundMs: 50, logger: quiet });

/** An entry with the card defaults, changed by `fields`. */
export function entry(fields: Partial<LorebookEntry> = {}): LorebookEntry {
  sequence++;
  return { ...defaultLorebookEntry, id: `entry-${sequence}`, content: `Content ${sequence}.`, ...fields };
}

export function book(entries: LorebookEntry[], settings: Partial<LorebookSettings> = {}): Lorebook {
  return { settings: { ...defaultLorebookSettings, ...settings }, entries };
}

/** One token a word, counted by us; `asked` records every text it was asked to count. */
export function wordCounter(exact = false): Pick<TokenCounter, 'count' | 'exact'> & { asked: string[] } {
  const asked: string[] = [];
  return {
    exact,
    asked,
    count: async (texts) => {
      asked.push(...texts);
      return texts.map((text) => text.split(/\s+/).filter(Boolean).length);
    },
  };
}
