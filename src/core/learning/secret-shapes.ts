/**
 * Secrets known by their shape alone, whatever words surround them: card numbers (Luhn),
 * bank account numbers (IBAN, mod 97), keys and tokens of the services people paste them from,
 * private keys, and long random strings. Each answers the spans it found, so the caller can
 * both refuse a text holding one and withhold it from what is sent on.
 */

/** A secret found in a text: where it is, what it is, and its value as compared (normalised). */
export interface SecretSpan {
  start: number;
  end: number;
  kind: SecretKind;
  value: string;
}

export type SecretKind = 'password' | 'pin' | 'one-time code' | 'key or token' | 'card number' | 'bank number' | 'identity number' | 'recovery phrase';

/** Keys and tokens by the prefixes their issuers give them (no words needed around them). */
const tokenShapes: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g,
  /(?<![\w-])sk-(?:proj-|ant-)?[A-Za-z0-9_-]{16,}/g,
  /(?<![\w-])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}/g,
  /(?<![\w-])(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g,
  /(?<![\w-])github_pat_[A-Za-z0-9_]{20,}/g,
  /(?<![\w-])glpat-[A-Za-z0-9_-]{16,}/g,
  /(?<![\w-])xox[abprs]-[A-Za-z0-9-]{10,}/g,
  /(?<![\w-])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])/g,
  /(?<![\w-])AIza[0-9A-Za-z_-]{30,}/g,
  /(?<![\w-])hf_[A-Za-z0-9]{20,}/g,
  /(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  // A Discord bot token: the bot's id in base64, a time, an HMAC.
  /(?<![\w-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}/g,
];

/**
 * A long string of letters (both cases) and digits, not part of an address: what a generated
 * password, key or token looks like. Words, numbers and links never are.
 */
const randomString = /(?<![\p{L}\p{N}_/.@:#-])[A-Za-z0-9_+/=-]{20,}(?![\p{L}\p{N}_/@])/gu;

export function secretShapesIn(text: string): SecretSpan[] {
  const found: SecretSpan[] = [];
  for (const shape of tokenShapes) {
    for (const match of text.matchAll(shape)) found.push({ start: match.index, end: match.index + match[0].length, kind: 'key or token', value: match[0] });
  }
  for (const match of text.matchAll(randomString)) {
    const value = match[0];
    if (/\d/.test(value) && /[a-z]/.test(value) && /[A-Z]/.test(value) && new Set(value).size >= 12) {
      found.push({ start: match.index, end: match.index + value.length, kind: 'key or token', value });
    }
  }
  found.push(...cardNumbersIn(text), ...ibansIn(text));
  return found;
}

/** Runs of digit groups (spaces, dashes or dots between): any 13 to 19 digits of a run that pass Luhn. */
function cardNumbersIn(text: string): SecretSpan[] {
  const found: SecretSpan[] = [];
  for (const run of text.matchAll(/(?<![\p{N}])\d+(?:[ .-]\d+)*(?![\p{N}])/gu)) {
    const groups = [...run[0].matchAll(/\d+/g)].map((group) => ({ start: run.index + group.index, digits: group[0] }));
    for (let first = 0; first < groups.length; first++) {
      let digits = '';
      for (let last = first; last < groups.length && digits.length < 19; last++) {
        digits += groups[last]!.digits;
        if (digits.length >= 13 && digits.length <= 19 && luhn(digits)) {
          found.push({ start: groups[first]!.start, end: groups[last]!.start + groups[last]!.digits.length, kind: 'card number', value: digits });
        }
      }
    }
  }
  return found;
}

/** The Luhn check every payment card number passes (and a random number only one time in ten). */
export function luhn(digits: string): boolean {
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = Number(digits[digits.length - 1 - index]);
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0 && !/^0+$/.test(digits);
}

/** IBANs written whole or in groups, any case: the longest prefix of the run whose check digits hold. */
function ibansIn(text: string): SecretSpan[] {
  const found: SecretSpan[] = [];
  const upper = text.toUpperCase();
  // toUpperCase keeps every index here only where each character stays one code unit: it does for the letters an IBAN holds.
  if (upper.length !== text.length) return found;
  for (const match of upper.matchAll(/(?<![\p{L}\p{N}])[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,32}/gu)) {
    const raw = match[0];
    for (let end = raw.length; end >= 15; end--) {
      if (!/[A-Z0-9]/.test(raw[end - 1]!)) continue;
      // The IBAN must end where a word or number ends, not inside one.
      const next = upper[match.index + end];
      if (next !== undefined && /[\p{L}\p{N}]/u.test(next)) continue;
      const compact = raw.slice(0, end).replace(/[ -]/g, '');
      if (compact.length >= 15 && compact.length <= 34 && ibanChecks(compact)) {
        found.push({ start: match.index, end: match.index + end, kind: 'bank number', value: compact });
        break;
      }
    }
  }
  return found;
}

/** ISO 13616: the country and check digits moved to the end, letters as numbers, the whole mod 97 is 1. */
export function ibanChecks(compact: string): boolean {
  const moved = compact.slice(4) + compact.slice(0, 4);
  let remainder = 0;
  for (const character of moved) {
    const code = character.charCodeAt(0);
    const value = code >= 65 && code <= 90 ? String(code - 55) : character;
    for (const digit of value) remainder = (remainder * 10 + Number(digit)) % 97;
  }
  return remainder === 1;
}
