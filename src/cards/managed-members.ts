/**
 * Our fields written into an `extensions` object's JSON text without touching the rest of it:
 * a member we manage is left as read when it already says what the field says, its value is
 * replaced when it does not, and it is added only when the field needs it. Reading applies
 * the same function, so import, export and import again give the same text.
 */
import { type Member, objectMembers } from './json-spans.js';

export interface ManagedMember {
  key: string;
  /** What to write when the member is missing or says something else. */
  value: unknown;
  /** Whether a value read already says what the field says (reading it back gives the same field). */
  accepts(existing: unknown): boolean;
  /** Whether a missing member must be added: the card's standard fields cannot say it. */
  needed: boolean;
}

/** `objectJson` is an object's JSON text; the result is one too, every unmanaged member byte for byte. */
export function withManagedMembers(objectJson: string, managed: readonly ManagedMember[]): string {
  const members = objectMembers(objectJson, objectJson.indexOf('{'));
  const edits: { start: number; end: number; text: string }[] = [];
  const additions: string[] = [];
  for (const member of managed) {
    const existing = members.findLast((candidate: Member) => candidate.key === member.key);
    if (existing === undefined) {
      if (member.needed) additions.push(`${JSON.stringify(member.key)}:${JSON.stringify(member.value)}`);
      continue;
    }
    const value: unknown = JSON.parse(objectJson.slice(existing.value.start, existing.value.end));
    if (!member.accepts(value)) edits.push({ ...existing.value, text: JSON.stringify(member.value) });
  }
  let result = objectJson;
  if (additions.length > 0) {
    const last = members.at(-1);
    const at = last === undefined ? objectJson.indexOf('{') + 1 : last.value.end;
    result = `${result.slice(0, at)}${last === undefined ? '' : ','}${additions.join(',')}${result.slice(at)}`;
  }
  // Additions go after every member, so the earlier spans still hold; edits apply last to first.
  for (const edit of edits.sort((left, right) => right.start - left.start)) {
    result = `${result.slice(0, edit.start)}${edit.text}${result.slice(edit.end)}`;
  }
  return result;
}

/** The value of `key` in an object's JSON text, parsed (our own small members only). */
export function memberValue(objectJson: string, key: string): unknown {
  const member = objectMembers(objectJson, objectJson.indexOf('{')).findLast((candidate) => candidate.key === key);
  return member === undefined ? undefined : JSON.parse(objectJson.slice(member.value.start, member.value.end));
}

/** Structural equality of parsed JSON values, key order aside. */
export function sameJson(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) return false;
  if (Array.isArray(left) !== Array.isArray(right)) return false;
  const leftKeys = Object.keys(left);
  const rightKeys = Object.keys(right);
  if (leftKeys.length !== rightKeys.length) return false;
  return leftKeys.every((key) => Object.hasOwn(right, key) && sameJson((left as Record<string, unknown>)[key], (right as Record<string, unknown>)[key]));
}

/** A member that is kept as read while it equals `value`. */
export function plainMember(key: string, value: unknown, needed: boolean): ManagedMember {
  return { key, value, needed, accepts: (existing) => sameJson(existing, value) };
}

/** Whether an object's JSON text is one (stored text could be anything; a bad one falls back to `{}`). */
export function objectJsonOrEmpty(objectJson: string): string {
  try {
    const value: unknown = JSON.parse(objectJson);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? objectJson : '{}';
  } catch {
    return '{}';
  }
}
