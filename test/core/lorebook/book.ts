import type { TokenCounter } from '../../../src/core/ports.js';
import { type Lorebook, type LorebookEntry, type LorebookSettings, defaultLorebookSettings } from '../../../src/core/lorebook/lorebook.js';

let sequence = 0;

/** An entry with the card defaults, changed by `fields`. */
export function entry(fields: Partial<LorebookEntry> = {}): LorebookEntry {
  sequence++;
  return {
    id: `entry-${sequence}`,
    name: '',
    keys: [],
    secondaryKeys: [],
    secondaryLogic: 'and_any',
    content: `Content ${sequence}.`,
    enabled: true,
    constant: false,
    caseSensitive: null,
    matchWholeWords: null,
    insertionOrder: 100,
    priority: 10,
    position: 'before_character',
    depth: 4,
    role: 'system',
    excludeRecursion: false,
    preventRecursion: false,
    scanDepth: null,
    extensionsJson: '{}',
    ...fields,
  };
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
