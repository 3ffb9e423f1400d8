/**
 * Which lorebook entries go into a prompt, and where, as SillyTavern decides for its world info:
 * keys looked for in the last messages, constant entries always, recursion through activated
 * contents when the book asks for it, all within a token budget.
 *
 * Precedence for the budget, in the order entries are let in (the first that does not fit stops
 * all further activation, recursion included):
 *   1. constant entries;
 *   2. entries whose keys are in the messages (or that say `@@activate`);
 *   3. entries activated by recursion, step by step: step 1 before step 2;
 * and within each of those, higher `priority` first (the card spec: lower is dropped first over
 * the budget), then lower `insertionOrder`, then the book's own order. Where an entry goes in the
 * prompt depends on its position and `insertionOrder` alone, never on why it came in.
 */
import type { RegexKeyRunner, TokenCounter } from '../ports.js';
import { readDecorators } from './decorators.js';
import { countEntryTokens } from './entry-tokens.js';
import { type CompiledKeys, type KeyMatcher, compileKeys } from './keys.js';
import type { Lorebook, LorebookEntry } from './lorebook.js';
import { RegexDecisions } from './regex-decisions.js';
import { type ScanText, ScanTexts } from './scan-text.js';

export interface ActivationRequest {
  book: Lorebook;
  /** The newest messages, newest last, each `speaker: text`; at least as many as the deepest scan. */
  messages: readonly string[];
  /** The whole context of a request; the book's share of it is the budget. */
  contextTokens: number;
  tokens: Pick<TokenCounter, 'count' | 'exact'>;
  /** Makes an entry's content what the prompt holds (macros); it is scanned and counted as such. */
  render?: ((content: string) => string) | undefined;
  /**
   * Runs the regular-expression keys, bounded in time. A key not decided in time (or refused)
   * keeps its entry out of this prompt: counting it as no match could let a NOT entry in.
   */
  regexes: RegexKeyRunner;
}

/** Why an entry is in. */
export type ActivationCause = 'constant' | 'message' | 'recursion';

export interface ActivatedEntry {
  entry: LorebookEntry;
  /** The content as the prompt holds it: decorators off, macros expanded. */
  content: string;
  tokens: number;
  cause: ActivationCause;
}

export interface Activation {
  /** In the system prompt before the character's description, in insertion order. */
  beforeCharacter: ActivatedEntry[];
  /** In the system prompt after the character's definition, in insertion order. */
  afterCharacter: ActivatedEntry[];
  /** In the history: deepest first, then in insertion order. */
  atDepth: ActivatedEntry[];
  /** Every entry in, in the order it was let in: what a reply records it used. */
  entryIds: string[];
  /** What they cost together (a token for the line between each counted too). */
  tokens: number;
  budget: number;
  /** Whether an activated entry was left out for want of budget. */
  overBudget: boolean;
}

interface Candidate {
  entry: LorebookEntry;
  /** Its place in the book, the last tie-breaker. */
  index: number;
  keys: CompiledKeys;
  forced: boolean;
  scanDepth: number;
  content: string;
}

export async function activateLorebook(request: ActivationRequest): Promise<Activation> {
  const { settings } = request.book;
  const budget = Math.max(0, Math.floor(settings.tokenBudgetShare * request.contextTokens));
  const candidates = usable(request.book, request.render);
  const admitted: (ActivatedEntry & { index: number })[] = [];
  const taken = new Set<number>();
  let used = 0;
  let overBudget = false;

  const admit = async (round: Candidate[], cause: (candidate: Candidate) => ActivationCause) => {
    const contents = round.map((candidate) => (request.render ? request.render(candidate.content) : candidate.content));
    const counts = await countEntryTokens(request.tokens, contents);
    for (const [position, candidate] of round.entries()) {
      const content = contents[position]!;
      if (content.trim() === '') continue;
      const tokens = (counts[position] ?? 0) + 1;
      if (used + tokens > budget) {
        overBudget = true;
        return;
      }
      used += tokens;
      taken.add(candidate.index);
      admitted.push({ entry: candidate.entry, index: candidate.index, content, tokens, cause: cause(candidate) });
    }
  };

  const regexes = new RegexDecisions(request.regexes);
  const scans = new ScanTexts(request.messages);
  const constants = candidates.filter((candidate) => candidate.entry.constant).sort(byPrecedence);
  const keyed = candidates.filter((candidate) => !candidate.entry.constant && !candidate.forced);
  await regexes.decide(keyed.map((candidate) => ({ keys: candidate.keys, scan: scans.at(candidate.scanDepth) })));
  const matched = candidates.filter((candidate) => !candidate.entry.constant && (candidate.forced || matches(candidate, scans))).sort(byPrecedence);
  await admit([...constants, ...matched], (candidate) => (candidate.entry.constant ? 'constant' : 'message'));

  const steps = settings.recursiveScanning ? settings.maxRecursionSteps : 0;
  for (let step = 1; step <= steps && !overBudget; step++) {
    const recursion = admitted.filter((each) => !each.entry.preventRecursion).map((each) => each.content).join('\n');
    if (recursion === '') break;
    const withContents = new ScanTexts(request.messages, recursion);
    const open = candidates.filter((candidate) => !taken.has(candidate.index) && !candidate.entry.constant && !candidate.entry.excludeRecursion);
    await regexes.decide(open.map((candidate) => ({ keys: candidate.keys, scan: withContents.at(candidate.scanDepth) })));
    const round = open.filter((candidate) => matches(candidate, withContents)).sort(byPrecedence);
    if (round.length === 0) break;
    await admit(round, () => 'recursion');
  }

  const placed = [...admitted].sort((left, right) => left.entry.insertionOrder - right.entry.insertionOrder || left.index - right.index);
  const strip = ({ index: _index, ...activated }: ActivatedEntry & { index: number }): ActivatedEntry => activated;
  return {
    beforeCharacter: placed.filter((each) => each.entry.position === 'before_character').map(strip),
    afterCharacter: placed.filter((each) => each.entry.position === 'after_character').map(strip),
    atDepth: placed
      .filter((each) => each.entry.position === 'at_depth')
      .sort((left, right) => right.entry.depth - left.entry.depth)
      .map(strip),
    entryIds: admitted.map((each) => each.entry.id),
    tokens: used,
    budget,
    overBudget,
  };
}

/** The entries that could ever come in: enabled, not `@@dont_activate`, with usable keys. */
function usable(book: Lorebook, render: ActivationRequest['render']): Candidate[] {
  const { settings } = book;
  // Keys may hold macros too (`{{char}}`), as SillyTavern reads them; most hold none and are kept as they are.
  const withMacros = (keys: string[]) => (render && keys.some((key) => key.includes('{{') || key.includes('<')) ? keys.map(render) : keys);
  return book.entries.flatMap((entry, index) => {
    if (!entry.enabled) return [];
    const decorated = readDecorators(entry.content);
    if (decorated.dontActivate) return [];
    const keys = compileKeys(withMacros(entry.keys), withMacros(entry.secondaryKeys), {
      caseSensitive: entry.caseSensitive ?? false,
      matchWholeWords: entry.matchWholeWords ?? true,
    });
    // A bad pattern anywhere could turn the entry's logic around (a NOT key that never matches): never in.
    if (keys.problem !== undefined) return [];
    if (!entry.constant && !decorated.activate && keys.primary.length === 0) return [];
    return [{ entry, index, keys, forced: decorated.activate, scanDepth: Math.max(0, entry.scanDepth ?? settings.scanDepth), content: decorated.content }];
  });
}

function matches(candidate: Candidate, scans: ScanTexts): boolean {
  const scan = scans.at(candidate.scanDepth);
  if (scan.text === '') return false;
  const { primary, secondary } = candidate.keys;
  if (anyMatches(primary, scan) !== true) return false;
  if (secondary.length === 0) return true;
  return secondaryHolds(candidate.entry.secondaryLogic, secondary, scan) === true;
}

/**
 * Whether the keys hold, in three values: undefined when the answer turns on a regular
 * expression that was not decided in time, so the entry stays out rather than guessed in.
 */
function secondaryHolds(logic: LorebookEntry['secondaryLogic'], keys: CompiledKeys['secondary'], scan: ScanText): boolean | undefined {
  switch (logic) {
    case 'and_any':
      return anyMatches(keys, scan);
    case 'and_all':
      return allMatch(keys, scan);
    case 'not_any':
      return not(anyMatches(keys, scan));
    case 'not_all':
      return not(allMatch(keys, scan));
  }
}

function outcome(key: KeyMatcher, scan: ScanText): boolean | undefined {
  return typeof key === 'function' ? key(scan) : scan.regexOutcomes.get(key.id);
}

function anyMatches(keys: readonly KeyMatcher[], scan: ScanText): boolean | undefined {
  let undecided = false;
  for (const key of keys) {
    const matched = outcome(key, scan);
    if (matched === true) return true;
    if (matched === undefined) undecided = true;
  }
  return undecided ? undefined : false;
}

function allMatch(keys: readonly KeyMatcher[], scan: ScanText): boolean | undefined {
  let undecided = false;
  for (const key of keys) {
    const matched = outcome(key, scan);
    if (matched === false) return false;
    if (matched === undefined) undecided = true;
  }
  return undecided ? undefined : true;
}

function not(value: boolean | undefined): boolean | undefined {
  return value === undefined ? undefined : !value;
}

function byPrecedence(left: Candidate, right: Candidate): number {
  return right.entry.priority - left.entry.priority || left.entry.insertionOrder - right.entry.insertionOrder || left.index - right.index;
}
