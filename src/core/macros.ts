/**
 * The macros character cards are written with (SillyTavern's, which the Character Card V2/V3
 * specs adopt): `{{char}}`, `{{user}}`, `<BOT>`, `<USER>`, `{{original}}`, `{{random:…}}`,
 * `{{pick:…}}`, `{{roll:…}}`, `{{// …}}`, `{{newline}}`, `{{trim}}`. Names are matched without
 * regard to case. A macro we do not know is left as written, so a card's own braces survive.
 *
 * One pass over the text: a value put in (a name, the original text) is never read again as
 * macros, so a person called `{{roll:d6}}` stays one. Macros nest (`{{random:{{char}},{{user}}}}`):
 * the inside is expanded first.
 */
import { rollDice } from './macro-dice.js';
import { seededRandom } from './seeded-random.js';

export interface MacroValues {
  /** The character's name in card text: its nickname when it has one. */
  character: string;
  /** The display name of the person answered; `defaultUserName` when there is none. */
  user: string;
  /** The app's own text at this place (system prompt, post-history); absent where there is none. */
  original?: string | undefined;
  /** Random numbers in [0, 1) for `{{random}}` and `{{roll}}`; `Math.random` by default. */
  random?: (() => number) | undefined;
  /**
   * What `{{pick}}` is seeded with (a conversation's id): the same pick in every prompt of the
   * conversation, unlike `{{random}}`, which draws again each time.
   */
  pickSeed?: string | undefined;
}

export const defaultUserName = 'User';

/** The name `{{char}}` stands for: the nickname when set (Character Card V3), else the name. */
export function characterMacroName(character: { name: string; definition?: { nickname: string } }): string {
  return character.definition?.nickname.trim() || character.name;
}

/** Marks where `{{trim}}` stood, to remove it with the newlines around it once all is expanded. */
const trimMark = '\u0000trim\u0000';

export function expandMacros(text: string, values: MacroValues): string {
  if (!text.includes('{{') && !text.includes('<')) return text;
  const state: ExpansionState = { values, random: values.random ?? Math.random, originalUsed: false, picks: 0 };
  const expanded = expandFrom(text, 0, state, 0).text;
  return expanded.includes(trimMark) ? expanded.replace(/(?:\r?\n)*\u0000trim\u0000(?:\r?\n)*/g, '') : expanded;
}

interface ExpansionState {
  values: MacroValues;
  random: () => number;
  /** SillyTavern puts the original text in once; a second `{{original}}` is empty. */
  originalUsed: boolean;
  /** How many `{{pick}}` so far: two identical picks in one text may differ, and stay so. */
  picks: number;
}

const maxNesting = 16;

const angleMacros: Record<string, keyof MacroValues> = { '<bot>': 'character', '<char>': 'character', '<user>': 'user' };

/**
 * Expands from `start` until the end, or, inside a macro (`depth` above 0), until its closing `}}`; returns the
 * text and where it stopped (after the braces, or the end when they never close).
 */
function expandFrom(text: string, start: number, state: ExpansionState, depth: number): { text: string; end: number; closed: boolean } {
  const inside = depth > 0;
  let output = '';
  let index = start;
  while (index < text.length) {
    const next = nextSpecial(text, index);
    if (next > index) {
      output += text.slice(index, next);
      index = next;
      continue;
    }
    if (inside && text.startsWith('}}', index)) return { text: output, end: index + 2, closed: true };
    // Past a nesting no card writes, braces are text: the stack stays bounded whatever comes in.
    if (text.startsWith('{{', index) && depth < maxNesting) {
      if (text.startsWith('{{//', index)) {
        const close = text.indexOf('}}', index + 4);
        if (close !== -1) {
          index = close + 2;
          continue;
        }
      }
      const inner = expandFrom(text, index + 2, state, depth + 1);
      if (!inner.closed) {
        // Braces that never close are text, as written.
        output += `{{${inner.text}`;
        index = inner.end;
        continue;
      }
      output += evaluate(inner.text, state) ?? `{{${inner.text}}}`;
      index = inner.end;
      continue;
    }
    if (text[index] === '<') {
      const name = /^<[a-z]{3,4}>/i.exec(text.slice(index, index + 6))?.[0].toLowerCase();
      const value = name === undefined ? undefined : angleMacros[name];
      if (name !== undefined && value !== undefined) {
        output += String(state.values[value]);
        index += name.length;
        continue;
      }
    }
    output += text[index];
    index++;
  }
  return { text: output, end: index, closed: false };
}

/** Where the next `{`, `}` or `<` is: plain text between them is copied whole. */
function nextSpecial(text: string, from: number): number {
  for (let index = from; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code === 0x7b || code === 0x7d || code === 0x3c) return index;
  }
  return text.length;
}

/** The value of one macro (its text between the braces), or undefined when it is not one we know. */
function evaluate(body: string, state: ExpansionState): string | undefined {
  const name = /^\s*([a-z]+)/i.exec(body)?.[1]?.toLowerCase();
  const argument = name === undefined ? '' : body.slice(body.toLowerCase().indexOf(name) + name.length);
  switch (name) {
    case 'char':
    case 'bot':
      return argument.trim() === '' ? state.values.character : undefined;
    case 'user':
      return argument.trim() === '' ? state.values.user : undefined;
    case 'newline':
      return argument.trim() === '' ? '\n' : undefined;
    case 'trim':
      return argument.trim() === '' ? trimMark : undefined;
    case 'original':
      if (argument.trim() !== '' || state.values.original === undefined) return undefined;
      if (state.originalUsed) return '';
      state.originalUsed = true;
      return state.values.original;
    case 'random':
      return choose(options(argument), state.random);
    case 'pick': {
      const choices = options(argument);
      if (choices === undefined) return undefined;
      const seed = `${state.values.pickSeed ?? ''}\u0001${body}\u0001${state.picks++}`;
      return choose(choices, seededRandom(seed));
    }
    case 'roll': {
      const formula = argument.replace(/^[:\s]+/, '').trim();
      return formula === '' ? undefined : rollDice(formula, state.random);
    }
    default:
      return undefined;
  }
}

/**
 * The choices after `random` or `pick`: `::a::b` splits on `::` (so choices may hold commas),
 * `:a,b` (or ` a,b`) on commas, where `\,` is a comma inside a choice.
 */
function options(argument: string): string[] | undefined {
  if (argument.startsWith('::')) return argument.slice(2).split('::');
  if (!/^[:\s]/.test(argument)) return undefined;
  const list = argument.slice(1);
  return list
    .replace(/\\,/g, '\u0001')
    .split(',')
    .map((choice) => choice.replace(/\u0001/g, ',').trim());
}

function choose(choices: readonly string[] | undefined, random: () => number): string | undefined {
  if (choices === undefined || choices.length === 0) return undefined;
  return choices[Math.min(choices.length - 1, Math.floor(random() * choices.length))];
}
