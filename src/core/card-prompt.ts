/**
 * What a character's card gives its prompt: its own system prompt (with `{{original}}` standing
 * for ours), scenario, example dialogue and post-history instructions, each with its macros
 * expanded once per prompt, so a `{{random}}` is the same wherever the prompt is measured and
 * sent. Creator notes never come here.
 */
import { type MacroValues, expandMacros } from './macros.js';
import type { TokenCounter } from './ports.js';
import type { CharacterDefinition, CharacterRecord } from './records.js';

/** The parts of the system prompt a card and its lorebook fill. */
export interface CardSections {
  /** The card's system prompt in place of our opening instruction; undefined: ours. */
  instruction?: string | undefined;
  description: string;
  personality: string;
  scenario: string;
  /** Lorebook entries before the character's description, and after its definition. */
  loreBefore: readonly string[];
  loreAfter: readonly string[];
  /** The example dialogue blocks that fit, first ones first. */
  examples: readonly string[];
}

export interface CardTexts {
  instruction: string | undefined;
  description: string;
  personality: string;
  scenario: string;
  /** `<START>` blocks of the example dialogue, in the card's order. */
  examples: string[];
  /** After the history; empty when the card has none (we have no post-history text of our own). */
  postHistory: string;
  /**
   * The card's Character's Note (SillyTavern's `extensions.depth_prompt`): a text that stays at a
   * depth of the history with a role, in every prompt; undefined when the card has none.
   */
  characterNote: { text: string; depth: number; role: 'system' | 'user' | 'assistant' } | undefined;
}

/** Our own opening of the system prompt: what a card's `{{original}}` stands for. */
export function ourInstruction(character: Pick<CharacterRecord, 'name'>): string {
  return `You are ${character.name}. Stay in character and answer as ${character.name} only.`;
}

/** The card's texts for one prompt, macros expanded with `values` (its `original` is set here). */
export function cardTexts(character: Pick<CharacterRecord, 'name' | 'description' | 'personalitySummary'>, definition: CharacterDefinition, values: MacroValues): CardTexts {
  const expand = (text: string, original?: string) => expandMacros(text, { ...values, original }).trim();
  return {
    instruction: definition.systemPrompt.trim() === '' ? undefined : expand(definition.systemPrompt, ourInstruction(character)),
    description: expand(character.description),
    personality: expand(character.personalitySummary),
    scenario: expand(definition.scenario),
    examples: exampleBlocks(expand(definition.exampleDialogue)),
    postHistory: definition.postHistoryInstructions.trim() === '' ? '' : expand(definition.postHistoryInstructions, ''),
    characterNote: characterNoteOf(definition.extensionsJson, expand),
  };
}

/** SillyTavern's `extensions.depth_prompt { prompt, depth (default 4), role (default system) }`, read leniently. */
function characterNoteOf(extensionsJson: string, expand: (text: string) => string): CardTexts['characterNote'] {
  let note: unknown;
  try {
    note = (JSON.parse(extensionsJson) as { depth_prompt?: unknown }).depth_prompt;
  } catch {
    return undefined;
  }
  if (typeof note !== 'object' || note === null) return undefined;
  const { prompt, depth, role } = note as { prompt?: unknown; depth?: unknown; role?: unknown };
  if (typeof prompt !== 'string' || prompt.trim() === '') return undefined;
  const text = expand(prompt);
  if (text === '') return undefined;
  return {
    text,
    depth: typeof depth === 'number' && Number.isInteger(depth) && depth >= 0 ? Math.min(depth, 10_000) : 4,
    role: role === 'user' || role === 'assistant' ? role : 'system',
  };
}

/** The `<START>` blocks of example dialogue (text before the first marker is a block too). */
export function exampleBlocks(text: string): string[] {
  return text
    .split(/<start>/i)
    .map((block) => block.trim())
    .filter((block) => block !== '');
}

const examplesHeading = 'Examples of how you speak (their style only; they did not happen in this conversation):';
const exampleBlock = (block: string) => `<START>\n${block}`;

/** How the examples read in the system prompt: told apart from what was said. */
export function examplesSection(blocks: readonly string[]): string {
  if (blocks.length === 0) return '';
  return [examplesHeading, ...blocks.map(exampleBlock)].join('\n');
}

/**
 * The first example dialogue blocks that fit `room` tokens with their heading (whole blocks: the
 * last ones go first), and what they cost, a token for each line break between counted too.
 */
export async function fitExamples(tokens: Pick<TokenCounter, 'count'>, blocks: readonly string[], room: number): Promise<{ blocks: string[]; tokens: number }> {
  if (blocks.length === 0 || room <= 0) return { blocks: [], tokens: 0 };
  const [heading = 0, ...costs] = await tokens.count([examplesHeading, ...blocks.map(exampleBlock)]);
  let used = heading + 2;
  const fitting: string[] = [];
  for (const [index, block] of blocks.entries()) {
    const cost = (costs[index] ?? 0) + 1;
    if (used + cost > room) break;
    used += cost;
    fitting.push(block);
  }
  return fitting.length === 0 ? { blocks: [], tokens: 0 } : { blocks: fitting, tokens: used };
}
