/**
 * What a lorebook's entries and settings say in `extensions`: SillyTavern's keys (which its
 * cards carry and it reads back: position, depth, role, selectiveLogic, match_whole_words, …)
 * and ours under `likeness`, for what no app has a key for. The same members are applied when
 * reading and writing (see managed-members.ts), so the stored text is stable across round trips.
 */
import type { LorebookEntry, LorebookPosition, LorebookRole, LorebookSettings, SecondaryKeyLogic } from '../core/lorebook/lorebook.js';
import { defaultLorebookSettings } from '../core/lorebook/lorebook.js';
import { boolean, defined, finiteNumber, isObject, type JsonObject } from './json-values.js';
import { type ManagedMember, plainMember } from './managed-members.js';

/** SillyTavern's `world_info_position`: 2/3 (around the author's note) and 5/6 (around the examples) have no place of ours; they read as after the character and are kept as read. */
const positions: Record<number, LorebookPosition> = { 0: 'before_character', 1: 'after_character', 2: 'after_character', 3: 'after_character', 4: 'at_depth', 5: 'after_character', 6: 'after_character' };
/** SillyTavern's `extension_prompt_roles`. */
const roles: readonly LorebookRole[] = ['system', 'user', 'assistant'];
/** SillyTavern's `world_info_logic`: AND_ANY, NOT_ALL, NOT_ANY, AND_ALL. */
const logics: readonly SecondaryKeyLogic[] = ['and_any', 'not_all', 'not_any', 'and_all'];

/** SillyTavern's default depth for an at-depth entry. */
export const defaultDepth = 4;

/**
 * A card's `token_budget` is in tokens, ours a share of the context. Cards are written for
 * contexts of any size; we read a budget against this reference context (SillyTavern's
 * default), write the share back through it, and keep the exact share under `likeness`
 * when the tokens cannot say it.
 */
export const referenceContextTokens = 8192;

export function positionOf(value: unknown): LorebookPosition | undefined {
  const number = finiteNumber(value);
  return number === undefined ? undefined : positions[number];
}

export function roleOf(value: unknown): LorebookRole | undefined {
  const number = finiteNumber(value);
  return number === undefined ? undefined : roles[number];
}

export function logicOf(value: unknown): SecondaryKeyLogic | undefined {
  const number = finiteNumber(value);
  return number === undefined ? undefined : logics[number];
}

/** The entry's members; `inactiveSecondaryKeys` are a card's secondary keys with `selective: false`, which nothing uses but which go back out. */
export function entryMembers(entry: LorebookEntry, inactiveSecondaryKeys: readonly string[]): ManagedMember[] {
  const atDepth = entry.position === 'at_depth';
  const likeness = defined({ inactive_secondary_keys: inactiveSecondaryKeys.length > 0 ? inactiveSecondaryKeys : undefined });
  return [
    { key: 'position', value: atDepth ? 4 : entry.position === 'before_character' ? 0 : 1, needed: atDepth, accepts: (existing) => positionOf(existing) === entry.position },
    { key: 'depth', value: entry.depth, needed: atDepth, accepts: (existing) => (finiteNumber(existing) ?? defaultDepth) === entry.depth },
    { key: 'role', value: roles.indexOf(entry.role), needed: atDepth, accepts: (existing) => (roleOf(existing) ?? 'system') === entry.role },
    { key: 'selectiveLogic', value: logics.indexOf(entry.secondaryLogic), needed: entry.secondaryLogic !== 'and_any', accepts: (existing) => (logicOf(existing) ?? 'and_any') === entry.secondaryLogic },
    { key: 'match_whole_words', value: entry.matchWholeWords, needed: entry.matchWholeWords !== null, accepts: (existing) => (boolean(existing) ?? null) === entry.matchWholeWords },
    // The standard `case_sensitive` says it; SillyTavern's copy is only corrected when it disagrees.
    { key: 'case_sensitive', value: entry.caseSensitive, needed: false, accepts: (existing) => (boolean(existing) ?? null) === entry.caseSensitive },
    { key: 'exclude_recursion', value: entry.excludeRecursion, needed: entry.excludeRecursion, accepts: (existing) => (existing === true) === entry.excludeRecursion },
    { key: 'prevent_recursion', value: entry.preventRecursion, needed: entry.preventRecursion, accepts: (existing) => (existing === true) === entry.preventRecursion },
    { key: 'scan_depth', value: entry.scanDepth, needed: entry.scanDepth !== null, accepts: (existing) => (finiteNumber(existing) ?? null) === entry.scanDepth },
    likenessMember(likeness),
  ];
}

export function tokenBudgetOf(share: number): number {
  return Math.round(share * referenceContextTokens);
}

export function bookMembers(settings: LorebookSettings): ManagedMember[] {
  const lossy = tokenBudgetOf(settings.tokenBudgetShare) / referenceContextTokens !== settings.tokenBudgetShare;
  const likeness = defined({
    token_budget_share: lossy ? settings.tokenBudgetShare : undefined,
    max_recursion_steps: settings.maxRecursionSteps === defaultLorebookSettings.maxRecursionSteps ? undefined : settings.maxRecursionSteps,
  });
  return [likenessMember(likeness)];
}

/**
 * Our namespace: added when it says something, replaced when it says something else. It holds
 * only our keys, each of a known shallow shape, made afresh from the fields: a card's own
 * `likeness` (ours from an earlier export, or a hostile one nested a million deep) is
 * replaced, never merged or walked further than our value goes.
 */
export function likenessMember(likeness: JsonObject): ManagedMember {
  return plainMember('likeness', likeness, Object.keys(likeness).length > 0);
}

export function likenessOf(extensions: unknown): JsonObject {
  return isObject(extensions) && isObject(extensions.likeness) ? extensions.likeness : {};
}
