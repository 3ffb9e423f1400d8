import type { Actor } from './actor.js';
import type { Characters } from './characters.js';
import { type FieldIssue, ValidationError, notFound } from './errors.js';
import { type Lorebook, type LorebookEntry, type LorebookSettings, defaultLorebookEntry, defaultLorebookSettings } from './lorebook/lorebook.js';
import { readDecorators } from './lorebook/decorators.js';
import { type RegexMatcher, keyProblem, regexOf } from './lorebook/keys.js';
import { probeRegexKeys } from './lorebook/regex-probe.js';
import type { IdGenerator, RegexKeyRunner } from './ports.js';
import type { RepositoryStore } from './repositories.js';

export const lorebookLimits = {
  entries: 2000,
  keys: 100,
  key: 500,
  content: 32_000,
  name: 200,
  depth: 10_000,
  scanDepth: 1000,
  recursionSteps: 10,
  extensionsJson: 64 * 1024,
  /** All of a book's texts together (contents, keys, names), in characters: what a prompt may scan and a process keep. */
  totalText: 2_000_000,
} as const;

/** An entry as given: its content, and whichever other fields differ from the defaults. */
export type LorebookEntryInput = Partial<Omit<LorebookEntry, 'id'>>;

/**
 * Characters' lorebooks: anyone who may see a character may read its book (a public card's
 * book is exported with it); only the owner changes it.
 */
export class Lorebooks {
  constructor(
    private readonly store: RepositoryStore,
    private readonly characters: Characters,
    private readonly ids: IdGenerator,
    /** Runs regular-expression keys as prompts will, to refuse at once one that hangs. */
    private readonly regexes: RegexKeyRunner,
  ) {}

  async get(actor: Actor, characterId: string): Promise<Lorebook> {
    await this.characters.get(actor, characterId);
    return this.store.lorebooks.get(characterId);
  }

  async setSettings(actor: Actor, characterId: string, change: Partial<LorebookSettings>): Promise<LorebookSettings> {
    await this.characters.getOwned(actor, characterId);
    // Read, changed and written under the book's lock: a concurrent change of other fields is kept.
    return this.store.transaction(async ({ lorebooks }) => {
      await lorebooks.lock(characterId);
      const current = await lorebooks.get(characterId);
      const settings = { ...defaultLorebookSettings, ...current.settings, ...change };
      throwIfAny(settingsIssues(settings));
      await lorebooks.setSettings(characterId, settings);
      return settings;
    });
  }

  async addEntry(actor: Actor, characterId: string, input: LorebookEntryInput): Promise<LorebookEntry> {
    await this.characters.getOwned(actor, characterId);
    const entry: LorebookEntry = { ...defaultLorebookEntry, ...input, id: this.ids.uuid() };
    throwIfAny([...entryIssues(entry), ...(await this.#keyIssues(entry))]);
    return this.store.transaction(async ({ lorebooks }) => {
      await lorebooks.lock(characterId);
      throwIfAny(sizeIssues([...(await lorebooks.get(characterId)).entries, entry]));
      return lorebooks.addEntry(characterId, entry, lorebookLimits.entries);
    });
  }

  /**
   * Keys that could never match (a regular expression that does not compile) or are refused as
   * too slow (by their form, or by hanging on a test text), said when a person writes them. A
   * card's book is taken as it is: such an entry is skipped when the prompt is built, so one bad
   * key never refuses a whole card.
   */
  async #keyIssues(entry: LorebookEntry): Promise<FieldIssue[]> {
    const issues: FieldIssue[] = [];
    // An entry that nothing could ever bring in. A card may hold such entries (SillyTavern makes
    // new ones keyless): kept there, they simply never activate.
    if (!entry.constant && !readDecorators(entry.content).activate && entry.enabled && entry.keys.every((key) => key.trim() === '')) {
      issues.push({ field: 'keys', message: 'needs at least one key, unless the entry is constant' });
    }
    const regexes: { field: string; key: string; regex: RegexMatcher }[] = [];
    const issue = (field: string, key: string, problem: string) => issues.push({ field, message: `${JSON.stringify(key.slice(0, 60))}: ${problem}` });
    for (const [field, keys] of [['keys', entry.keys], ['secondary_keys', entry.secondaryKeys]] as const) {
      for (const key of keys) {
        const problem = keyProblem(key, this.regexes);
        const regex = regexOf(key);
        if (problem) issue(field, key, problem);
        else if (regex) regexes.push({ field, key, regex });
      }
    }
    if (regexes.length === 0) return issues;
    const refused = await probeRegexKeys(regexes.map(({ regex }) => regex), this.regexes);
    for (const { field, key, regex } of regexes) {
      const problem = refused.get(regex);
      if (problem) issue(field, key, problem);
    }
    return issues;
  }

  async updateEntry(actor: Actor, characterId: string, entryId: string, change: LorebookEntryInput): Promise<LorebookEntry> {
    await this.characters.getOwned(actor, characterId);
    const probed = await this.store.lorebooks.get(characterId);
    const before = probed.entries.find((entry) => entry.id === entryId);
    if (!before) throw notFound('Lorebook entry', entryId);
    // Keys are tried (on the regex runner) before the book is locked: the lock is never held while waiting on it.
    throwIfAny(await this.#keyIssues({ ...before, ...change, id: entryId }));
    return this.store.transaction(async ({ lorebooks }) => {
      await lorebooks.lock(characterId);
      const book = await lorebooks.get(characterId);
      const current = book.entries.find((entry) => entry.id === entryId);
      if (!current) throw notFound('Lorebook entry', entryId);
      const entry: LorebookEntry = { ...current, ...change, id: entryId };
      throwIfAny([...entryIssues(entry), ...sizeIssues(book.entries.map((each) => (each.id === entryId ? entry : each)))]);
      return lorebooks.updateEntry(characterId, entry);
    });
  }

  async removeEntry(actor: Actor, characterId: string, entryId: string): Promise<void> {
    await this.characters.getOwned(actor, characterId);
    if (!(await this.store.lorebooks.removeEntry(characterId, entryId))) throw notFound('Lorebook entry', entryId);
  }

  /** Replaces a character's whole book (a card's), checked as entries added one by one are. */
  async replace(actor: Actor, characterId: string, lorebook: Lorebook): Promise<void> {
    await this.characters.getOwned(actor, characterId);
    throwIfAny(lorebookIssues(lorebook));
    await this.store.lorebooks.replace(characterId, { ...lorebook, entries: lorebook.entries.map((entry) => ({ ...entry, id: this.ids.uuid() })) });
  }
}

/** Every bound a book must keep, named by the API's field names; empty when it keeps them. */
export function lorebookIssues(lorebook: Lorebook): FieldIssue[] {
  const issues = settingsIssues(lorebook.settings);
  if (lorebook.entries.length > lorebookLimits.entries) issues.push({ field: 'entries', message: `must hold at most ${lorebookLimits.entries}` });
  lorebook.entries.forEach((entry, index) => issues.push(...entryIssues(entry).map((issue) => ({ ...issue, field: `entries.${index}.${issue.field}` }))));
  issues.push(...sizeIssues(lorebook.entries));
  return issues;
}

/** What a book's entries hold in all, in characters: the measure of `lorebookLimits.totalText`. */
export function lorebookTextSize(entries: readonly LorebookEntry[]): number {
  let size = 0;
  for (const entry of entries) {
    size += entry.content.length + entry.name.length + entry.extensionsJson.length;
    for (const key of entry.keys) size += key.length;
    for (const key of entry.secondaryKeys) size += key.length;
  }
  return size;
}

function sizeIssues(entries: readonly LorebookEntry[]): FieldIssue[] {
  const size = lorebookTextSize(entries);
  return size > lorebookLimits.totalText ? [{ field: 'entries', message: `hold ${size} characters in all; a lorebook holds at most ${lorebookLimits.totalText}` }] : [];
}

function throwIfAny(issues: FieldIssue[]): void {
  if (issues.length > 0) throw new ValidationError(issues);
}

function settingsIssues(settings: LorebookSettings): FieldIssue[] {
  const issues: FieldIssue[] = [];
  if (!(settings.tokenBudgetShare > 0 && settings.tokenBudgetShare <= 1)) issues.push({ field: 'token_budget_share', message: 'must be above 0 and at most 1' });
  if (!inRange(settings.scanDepth, 0, lorebookLimits.scanDepth)) issues.push({ field: 'scan_depth', message: `must be a whole number from 0 to ${lorebookLimits.scanDepth}` });
  if (!inRange(settings.maxRecursionSteps, 0, lorebookLimits.recursionSteps)) {
    issues.push({ field: 'max_recursion_steps', message: `must be a whole number from 0 to ${lorebookLimits.recursionSteps}` });
  }
  if (settings.name.length > lorebookLimits.name) issues.push({ field: 'name', message: `must be at most ${lorebookLimits.name} characters` });
  if (settings.description.length > lorebookLimits.content) issues.push({ field: 'description', message: `must be at most ${lorebookLimits.content} characters` });
  if (settings.extensionsJson.length > lorebookLimits.extensionsJson) issues.push({ field: 'extensions', message: 'is too large' });
  return issues;
}

function entryIssues(entry: LorebookEntry): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [field, keys] of [['keys', entry.keys], ['secondary_keys', entry.secondaryKeys]] as const) {
    if (keys.length > lorebookLimits.keys) issues.push({ field, message: `must hold at most ${lorebookLimits.keys} keys` });
    if (keys.some((key) => key.length > lorebookLimits.key)) issues.push({ field, message: `each key must be at most ${lorebookLimits.key} characters` });
  }
  if (entry.content.length > lorebookLimits.content) issues.push({ field: 'content', message: `must be at most ${lorebookLimits.content} characters` });
  if (entry.name.length > lorebookLimits.name) issues.push({ field: 'name', message: `must be at most ${lorebookLimits.name} characters` });
  if (!inRange(entry.depth, 0, lorebookLimits.depth)) issues.push({ field: 'depth', message: `must be a whole number from 0 to ${lorebookLimits.depth}` });
  if (entry.scanDepth !== null && !inRange(entry.scanDepth, 0, lorebookLimits.scanDepth)) {
    issues.push({ field: 'scan_depth', message: `must be a whole number from 0 to ${lorebookLimits.scanDepth}` });
  }
  if (!Number.isFinite(entry.insertionOrder) || !Number.isFinite(entry.priority)) issues.push({ field: 'insertion_order', message: 'must be a number' });
  if (entry.extensionsJson.length > lorebookLimits.extensionsJson) issues.push({ field: 'extensions', message: 'is too large' });
  return issues;
}

function inRange(value: number, minimum: number, maximum: number): boolean {
  return Number.isInteger(value) && value >= minimum && value <= maximum;
}
