/**
 * Our Lorebook as a card's `character_book`: V3 (with decorators written from the fields) or
 * V2 (every decorator stripped, as the V3 spec asks). SillyTavern's extension keys carry what
 * the standard fields cannot (at-depth entries, the secondary logic, whole words), so a book
 * exported from here works there too.
 */
import type { Lorebook, LorebookEntry } from '../core/lorebook/lorebook.js';
import { stripDecorators, writeDecorators } from './decorators.js';
import { nextNumericId, strings } from './json-values.js';
import { bookMembers, entryMembers, likenessOf, tokenBudgetOf } from './lorebook-extensions.js';
import { memberValue, objectJsonOrEmpty, withManagedMembers } from './managed-members.js';
import type { RawJsonWriter } from './raw-json.js';

export type CardVersion = 'v2' | 'v3';

export function writeLorebook(book: Lorebook, version: CardVersion, writer: RawJsonWriter): Record<string, unknown> {
  const { settings } = book;
  const extensionsJson = objectJsonOrEmpty(settings.extensionsJson);
  const v2Ids = numericIds(book.entries);
  return {
    name: settings.name,
    description: settings.description,
    scan_depth: settings.scanDepth,
    token_budget: tokenBudgetOf(settings.tokenBudgetShare),
    recursive_scanning: settings.recursiveScanning,
    extensions: writer.raw(withManagedMembers(extensionsJson, bookMembers(settings))),
    entries: book.entries.map((entry, index) => writeEntry(entry, version === 'v3' ? entry.id : v2Ids[index]!, version, writer)),
  };
}

/** V2 ids are numbers: ours that are numbers stay, the others take the next numbers after the highest. */
function numericIds(entries: readonly LorebookEntry[]): number[] {
  const numeric = (id: string) => (/^\d{1,15}$/.test(id) ? Number(id) : undefined);
  let next = nextNumericId(entries.map((entry) => entry.id));
  return entries.map((entry) => numeric(entry.id) ?? next++);
}

function writeEntry(entry: LorebookEntry, id: string | number, version: CardVersion, writer: RawJsonWriter): Record<string, unknown> {
  const extensionsJson = objectJsonOrEmpty(entry.extensionsJson);
  const likeness = memberValue(extensionsJson, 'likeness');
  const inactiveKeys = entry.secondaryKeys.length === 0 ? strings(likenessOf({ likeness }).inactive_secondary_keys) : [];
  const decorators = version === 'v3' ? writeDecorators(entry) : [];
  const content = version === 'v3' ? [...decorators, entry.content].join('\n') : stripDecorators(entry.content);
  return {
    id: typeof id === 'string' && /^\d{1,15}$/.test(id) ? Number(id) : id,
    keys: entry.keys,
    secondary_keys: entry.secondaryKeys.length > 0 ? entry.secondaryKeys : inactiveKeys,
    selective: entry.secondaryKeys.length > 0 || inactiveKeys.length === 0,
    content,
    enabled: entry.enabled,
    constant: entry.constant,
    insertion_order: entry.insertionOrder,
    priority: entry.priority,
    // Regular expressions are written as `/pattern/flags` keys, which SillyTavern reads as such.
    ...(version === 'v3' ? { use_regex: false } : {}),
    ...(entry.caseSensitive === null ? {} : { case_sensitive: entry.caseSensitive }),
    name: entry.name,
    comment: entry.name,
    position: entry.position === 'before_character' ? 'before_char' : 'after_char',
    extensions: writer.raw(withManagedMembers(extensionsJson, entryMembers(entry, inactiveKeys))),
  };
}
