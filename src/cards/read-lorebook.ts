/**
 * A card's `character_book` (V2, V3) as our Lorebook. The parsed book gives the values; the
 * text gives the `extensions` of the book and of each entry, byte for byte.
 */
import { defaultLorebookSettings, type Lorebook, type LorebookEntry, type LorebookSettings } from '../core/lorebook/lorebook.js';
import { readDecorators } from './decorators.js';
import { arrayElements, memberSpan, objectText, type Span } from './json-spans.js';
import { boolean, finiteNumber, isObject, type JsonObject, nextNumericId, strings, text } from './json-values.js';
import { bookMembers, defaultDepth, entryMembers, likenessOf, logicOf, positionOf, referenceContextTokens, roleOf } from './lorebook-extensions.js';
import { withManagedMembers } from './managed-members.js';

/** SillyTavern's default `order`, for entries that give none. */
const defaultOrder = 100;

/** `book` is the parsed `character_book`; `span` is where it sits in `json`. */
export function readLorebook(book: JsonObject, json: string, span: Span): Lorebook {
  const bookExtensions = isObject(book.extensions) ? book.extensions : {};
  const tokenBudget = finiteNumber(book.token_budget);
  const share = finiteNumber(likenessOf(bookExtensions).token_budget_share);
  const settings: LorebookSettings = {
    name: text(book.name),
    description: text(book.description),
    scanDepth: wholeOr(book.scan_depth, defaultLorebookSettings.scanDepth),
    tokenBudgetShare:
      share !== undefined && share > 0 && share <= 1
        ? share
        : tokenBudget !== undefined && tokenBudget > 0
          ? Math.min(1, tokenBudget / referenceContextTokens)
          : defaultLorebookSettings.tokenBudgetShare,
    recursiveScanning: boolean(book.recursive_scanning) ?? defaultLorebookSettings.recursiveScanning,
    maxRecursionSteps: wholeOr(likenessOf(bookExtensions).max_recursion_steps, defaultLorebookSettings.maxRecursionSteps),
    extensionsJson: '{}',
  };
  settings.extensionsJson = withManagedMembers(objectText(json, memberSpan(json, span.start, 'extensions')), bookMembers(settings));

  const entriesSpan = memberSpan(json, span.start, 'entries');
  const entrySpans = entriesSpan !== undefined && Array.isArray(book.entries) ? arrayElements(json, entriesSpan.start) : [];
  const entries: LorebookEntry[] = [];
  const useRegex = book.use_regex === true;
  for (const [index, entry] of (Array.isArray(book.entries) ? book.entries : []).entries()) {
    const entrySpan = entrySpans[index];
    if (!isObject(entry) || entrySpan === undefined) continue;
    entries.push(readEntry(entry, objectText(json, memberSpan(json, entrySpan.start, 'extensions')), useRegex));
  }
  return { settings, entries: withUniqueIds(entries) };
}

/** Entries without an id (or repeating one) get the next numbers after the highest, as SillyTavern numbers its own. */
function withUniqueIds(entries: LorebookEntry[]): LorebookEntry[] {
  const seen = new Set<string>();
  let next = nextNumericId(entries.map((entry) => entry.id));
  return entries.map((entry) => {
    if (entry.id !== '' && !seen.has(entry.id)) {
      seen.add(entry.id);
      return entry;
    }
    const id = String(next++);
    seen.add(id);
    return { ...entry, id };
  });
}

function readEntry(entry: JsonObject, extensionsJson: string, bookUsesRegex: boolean): LorebookEntry {
  const extensions = JSON.parse(extensionsJson) as JsonObject;
  const decorated = readDecorators(text(entry.content));
  const caseSensitive = boolean(entry.case_sensitive) ?? boolean(extensions.case_sensitive) ?? null;
  // V3 `use_regex` makes every key a pattern; ours say so each, as `/pattern/`. Such keys follow
  // the entry's case rule as SillyTavern applies it (insensitive unless the entry says otherwise),
  // which in ours only the flags can say.
  const asRegex = entry.use_regex === true || bookUsesRegex;
  const wrapped = (key: string) => (caseSensitive === true ? `/${key}/` : `/${key}/i`);
  const keysOf = (value: unknown) => strings(value).map((key) => (asRegex && !isRegexKey(key) ? wrapped(key) : key));
  const secondaryKeys = keysOf(entry.secondary_keys);
  // V2: secondary keys count only when `selective`; without it they are kept aside, unused.
  const selective = entry.selective !== false;
  const id = typeof entry.id === 'number' || typeof entry.id === 'string' ? String(entry.id) : '';
  const fields: LorebookEntry = {
    id,
    name: text(entry.name) || text(entry.comment),
    keys: keysOf(entry.keys),
    secondaryKeys: selective ? secondaryKeys : [],
    secondaryLogic: logicOf(extensions.selectiveLogic) ?? 'and_any',
    content: decorated.content,
    enabled: boolean(entry.enabled) ?? true,
    constant: entry.constant === true,
    caseSensitive,
    matchWholeWords: boolean(extensions.match_whole_words) ?? null,
    insertionOrder: finiteNumber(entry.insertion_order) ?? defaultOrder,
    priority: finiteNumber(entry.priority) ?? defaultOrder,
    // SillyTavern's own keys first (its editor changes them), then the V3 decorators, then V2's field.
    position:
      positionOf(extensions.position) ??
      (decorated.fields.depth !== undefined ? 'at_depth' : decorated.fields.position) ??
      (entry.position === 'before_char' ? 'before_character' : 'after_character'),
    depth: finiteNumber(extensions.depth) ?? decorated.fields.depth ?? defaultDepth,
    role: roleOf(extensions.role) ?? decorated.fields.role ?? 'system',
    excludeRecursion: extensions.exclude_recursion === true,
    preventRecursion: extensions.prevent_recursion === true,
    scanDepth: finiteNumber(extensions.scan_depth) ?? decorated.fields.scanDepth ?? null,
    extensionsJson: '{}',
  };
  fields.extensionsJson = withManagedMembers(extensionsJson, entryMembers(fields, selective ? [] : secondaryKeys));
  return fields;
}

export function isRegexKey(key: string): boolean {
  return /^\/.+\/[a-z]*$/s.test(key);
}

function wholeOr(value: unknown, fallback: number): number {
  const number = finiteNumber(value);
  return number !== undefined && Number.isInteger(number) && number >= 0 ? number : fallback;
}
