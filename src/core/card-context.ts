/**
 * A character's card and lorebook, made ready for one prompt: texts with their macros expanded
 * once, and the lorebook entries the newest messages activate. The context window then keeps
 * what fits: lorebook entries give way (the last let in first) after memories and the summary.
 */
import { type CardSections, type CardTexts, cardTexts } from './card-prompt.js';
import type { HistoryInsertion } from './history-insertions.js';
import { type ActivatedEntry, activateLorebook } from './lorebook/activation.js';
import type { Lorebook } from './lorebook/lorebook.js';
import { type MacroValues, expandMacros } from './macros.js';
import type { RegexKeyRunner, TokenCounter } from './ports.js';
import type { CharacterRecord } from './records.js';

/** No card means to scan further back than this; a book asking for more is read this deep. */
export const maxScanDepth = 100;

export interface CardContext {
  texts: CardTexts;
  /** The activated lorebook entries, in the order they were let in (the budget's precedence). */
  lore: ActivatedEntry[];
  /** The same in the order they go into the prompt: by position, then insertion order (at depth: deepest first). */
  placed: ActivatedEntry[];
  /** What the texts that stay in every prompt after the system prompt cost: post-history instructions and the character's note. */
  postHistoryTokens: number;
}

export interface CardParts {
  sections: CardSections;
  /** At-depth entries, then the post-history instructions last. */
  insertions: HistoryInsertion[];
  /** What the insertions' text costs, without the framing of the turns they may add. */
  insertionTokens: number;
  /** The lorebook entries the prompt holds: what the reply records. */
  loreIds: string[];
}

/** How many of the newest messages the book's keys are looked for in. */
export function deepestScan(book: Lorebook): number {
  const enabled = book.entries.filter((entry) => entry.enabled);
  if (enabled.length === 0) return 0;
  return Math.min(maxScanDepth, Math.max(book.settings.scanDepth, ...enabled.map((entry) => entry.scanDepth ?? 0)));
}

export async function prepareCardContext(input: {
  character: CharacterRecord;
  book: Lorebook;
  /** The newest messages, newest last, each `speaker: text`. */
  scanned: readonly string[];
  contextTokens: number;
  tokens: TokenCounter;
  values: MacroValues;
  regexes: RegexKeyRunner;
}): Promise<CardContext> {
  const texts = cardTexts(input.character, input.character.definition, input.values);
  const [activation, [postHistoryTokens = 0]] = await Promise.all([
    input.book.entries.length === 0
      ? undefined
      : activateLorebook({
          book: input.book,
          messages: input.scanned,
          contextTokens: input.contextTokens,
          tokens: input.tokens,
          render: (content) => expandMacros(content, input.values),
          regexes: input.regexes,
        }),
    // The post-history instructions and the character's note stay in every prompt: counted together.
    input.tokens.count([texts.postHistory, texts.characterNote?.text ?? '']).then(([post = 0, note = 0]) => [(texts.postHistory === '' ? 0 : post) + (texts.characterNote ? note : 0)]),
  ]);
  const placed = [...(activation?.beforeCharacter ?? []), ...(activation?.afterCharacter ?? []), ...(activation?.atDepth ?? [])];
  const byId = new Map(placed.map((each) => [each.entry.id, each]));
  const lore = (activation?.entryIds ?? []).flatMap((id) => byId.get(id) ?? []);
  return { texts, lore, placed, postHistoryTokens };
}

/** The prompt's card parts with the first `loreKept` lorebook entries (in precedence) and `examples`. */
export function cardParts(context: CardContext, loreKept: number, examples: readonly string[]): CardParts {
  const kept = new Set(context.lore.slice(0, loreKept));
  // Placement follows insertion order (as activation sorted each group), never precedence.
  const placed = (position: ActivatedEntry['entry']['position']) => context.placed.filter((each) => kept.has(each) && each.entry.position === position);
  const atDepth = placed('at_depth');
  const { texts } = context;
  const insertions: HistoryInsertion[] = atDepth.map((each) => ({ depth: each.entry.depth, role: each.entry.role, text: each.content }));
  if (texts.characterNote) insertions.push(texts.characterNote);
  if (texts.postHistory !== '') insertions.push({ depth: 0, role: 'system', text: texts.postHistory });
  return {
    sections: {
      instruction: texts.instruction,
      description: texts.description,
      personality: texts.personality,
      scenario: texts.scenario,
      loreBefore: placed('before_character').map((each) => each.content),
      loreAfter: placed('after_character').map((each) => each.content),
      examples,
    },
    insertions,
    insertionTokens: atDepth.reduce((sum, each) => sum + each.tokens, 0) + context.postHistoryTokens,
    loreIds: [...kept].map((each) => each.entry.id),
  };
}
