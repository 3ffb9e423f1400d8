/**
 * A character's lorebook ("world info"): entries of text that go into the prompt when their keys
 * appear in the last messages. The shapes follow what character cards carry (V2 `character_book`,
 * V3 lorebooks) and what SillyTavern does with them, in our own names; the card module at the edge
 * maps the card fields onto these.
 */

/** How an entry's secondary keys combine with its primary match (SillyTavern's four logics). */
export type SecondaryKeyLogic = 'and_any' | 'and_all' | 'not_any' | 'not_all';

/** Where an activated entry's content goes. */
export type LorebookPosition =
  /** In the system prompt, before the character's description. */
  | 'before_character'
  /** In the system prompt, after the character's description. */
  | 'after_character'
  /** In the history, `depth` messages from its end (0 = after the newest), with `role`. */
  | 'at_depth';

export type LorebookRole = 'system' | 'user' | 'assistant';

export interface LorebookEntry {
  id: string;
  /** A name for people reading the book (the card's `name` or `comment`); never in a prompt. */
  name: string;
  /** Primary keys: plain text, or `/pattern/flags` as a regular expression. */
  keys: string[];
  /** Optional secondary keys, combined with the primary match by `secondaryLogic`. */
  secondaryKeys: string[];
  secondaryLogic: SecondaryKeyLogic;
  content: string;
  enabled: boolean;
  /** Always in (within the budget), keys or not. */
  constant: boolean;
  /** Null: the book's default (case-insensitive). */
  caseSensitive: boolean | null;
  /** Null: the book's default (whole words). A plain key then matches only as whole words. */
  matchWholeWords: boolean | null;
  /** Lower goes earlier in the prompt (the card's `insertion_order`). */
  insertionOrder: number;
  /** Over the budget, lower priority is dropped first (the card's `priority`). */
  priority: number;
  position: LorebookPosition;
  /** For `at_depth`: how many messages from the end of the history. */
  depth: number;
  /** For `at_depth`: the role of the inserted message. */
  role: LorebookRole;
  /**
   * This entry is never activated by another entry's content, only by messages (SillyTavern's
   * `excludeRecursion`, "non-recursable", which cards carry under that name).
   */
  excludeRecursion: boolean;
  /** This entry's content never activates other entries (SillyTavern's `preventRecursion`, "prevent further recursion"). */
  preventRecursion: boolean;
  /** Null: the book's scan depth. */
  scanDepth: number | null;
  /** The card's entry `extensions` (other apps' keys), kept as the JSON text read. */
  extensionsJson: string;
}

export interface LorebookSettings {
  name: string;
  description: string;
  /** How many of the newest messages are scanned for keys (SillyTavern's default 2). */
  scanDepth: number;
  /** The share of the context the activated entries may take, 0–1 (default 0.25). */
  tokenBudgetShare: number;
  /** Activated entries' contents are scanned for more keys. */
  recursiveScanning: boolean;
  /** How many rounds of recursion at most. */
  maxRecursionSteps: number;
  /** The card's book `extensions`, kept as the JSON text read. */
  extensionsJson: string;
}

export const defaultLorebookSettings: LorebookSettings = {
  name: '',
  description: '',
  scanDepth: 2,
  tokenBudgetShare: 0.25,
  recursiveScanning: false,
  maxRecursionSteps: 3,
  extensionsJson: '{}',
};

export interface Lorebook {
  settings: LorebookSettings;
  entries: LorebookEntry[];
}

/** An entry's fields as a card's entry has them when it says nothing more. */
export const defaultLorebookEntry: Omit<LorebookEntry, 'id'> = {
  name: '',
  keys: [],
  secondaryKeys: [],
  secondaryLogic: 'and_any',
  content: '',
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
};
