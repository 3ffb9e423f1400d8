/**
 * Reading a card's parsed JSON leniently, as the apps that write cards do: a field of the
 * wrong type (cards in the wild carry `null` and numbers where strings belong) reads as unset
 * rather than refusing a card a person can use.
 */
export type JsonObject = Record<string, unknown>;

export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

export function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];
}

export function finiteNumber(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

export function boolean(value: unknown): boolean | undefined {
  return typeof value === 'boolean' ? value : undefined;
}

/** The string members of an object (V3 `creator_notes_multilingual`), others dropped. */
export function stringRecord(value: unknown): Record<string, string> | undefined {
  if (!isObject(value)) return undefined;
  return Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === 'string'));
}

/** The highest whole-number id among `ids` plus one (0 when there is none), without spreading a long list into arguments. */
export function nextNumericId(ids: readonly string[]): number {
  return ids.reduce((highest, id) => (/^\d{1,15}$/.test(id) ? Math.max(highest, Number(id)) : highest), -1) + 1;
}

/** Drops undefined values, so an object says only what is set. */
export function defined(value: JsonObject): JsonObject {
  return Object.fromEntries(Object.entries(value).filter(([, item]) => item !== undefined));
}
