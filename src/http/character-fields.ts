import { z } from 'zod';
import { characterLimits } from '../core/characters.js';
import type { LorebookEntryInput } from '../core/lorebooks.js';
import { lorebookLimits } from '../core/lorebooks.js';
import type { LorebookEntry, LorebookSettings } from '../core/lorebook/lorebook.js';
import type { CharacterDefinition } from '../core/records.js';

/**
 * The Character resource's fields beyond the seed's, in the API's snake_case (as the card
 * formats and the seed's own fields are), both ways; and the lorebook's. One table of names
 * serves the answer, the request schema and the OpenAPI document.
 */

const text = (limit: number) => z.string().max(limit);
const list = (count: number, length: number) => z.array(z.string().max(length)).max(count);
/** Other apps' keys, kept and given back; ours go under `likeness`. */
const extensions = z.record(z.string(), z.unknown()).describe('Card extensions: other apps\' keys are kept and exported unchanged');

export const definitionSchema = {
  nickname: text(characterLimits.name).describe('Used instead of the name in the prompt when set'),
  scenario: text(characterLimits.definitionText),
  first_message: text(characterLimits.definitionText).describe('The greeting a new conversation opens with'),
  alternate_greetings: list(characterLimits.greetings, characterLimits.definitionText).describe('Alternatives (swipes) of the first message'),
  group_only_greetings: list(characterLimits.greetings, characterLimits.definitionText).describe('Greetings used instead in a scene'),
  example_dialogue: text(characterLimits.definitionText).describe('<START> blocks of {{user}}: and {{char}}: lines; dropped first when the context is tight'),
  system_prompt: text(characterLimits.definitionText).describe('Replaces the service\'s system prompt; {{original}} stands for it'),
  post_history_instructions: text(characterLimits.definitionText).describe('Goes after the history; {{original}} stands for the service\'s own'),
  creator_notes: text(characterLimits.definitionText).describe('For people; never in a prompt'),
  tags: list(characterLimits.tags, characterLimits.tag),
  creator: text(characterLimits.name),
  character_version: text(characterLimits.name),
  extensions,
};

export function definitionFields(definition: CharacterDefinition) {
  return {
    nickname: definition.nickname,
    scenario: definition.scenario,
    first_message: definition.firstMessage,
    alternate_greetings: definition.alternateGreetings,
    group_only_greetings: definition.groupOnlyGreetings,
    example_dialogue: definition.exampleDialogue,
    system_prompt: definition.systemPrompt,
    post_history_instructions: definition.postHistoryInstructions,
    creator_notes: definition.creatorNotes,
    tags: definition.tags,
    creator: definition.creator,
    character_version: definition.characterVersion,
    extensions: JSON.parse(definition.extensionsJson) as Record<string, unknown>,
  };
}

type DefinitionBody = Partial<{ [Key in keyof typeof definitionSchema]: z.infer<(typeof definitionSchema)[Key]> }>;

/** The definition fields a request named; the others stay as they are. */
export function definitionChange(body: DefinitionBody): Partial<CharacterDefinition> {
  const change: Partial<CharacterDefinition> = {
    nickname: body.nickname,
    scenario: body.scenario,
    firstMessage: body.first_message,
    alternateGreetings: body.alternate_greetings,
    groupOnlyGreetings: body.group_only_greetings,
    exampleDialogue: body.example_dialogue,
    systemPrompt: body.system_prompt,
    postHistoryInstructions: body.post_history_instructions,
    creatorNotes: body.creator_notes,
    tags: body.tags,
    creator: body.creator,
    characterVersion: body.character_version,
    extensionsJson: body.extensions === undefined ? undefined : JSON.stringify(body.extensions),
  };
  return Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
}

export const lorebookEntrySchema = z
  .object({
    name: text(lorebookLimits.name),
    keys: list(lorebookLimits.keys, lorebookLimits.key).describe('Plain text, or /pattern/flags for a regular expression'),
    secondary_keys: list(lorebookLimits.keys, lorebookLimits.key),
    secondary_logic: z.enum(['and_any', 'and_all', 'not_any', 'not_all']),
    content: text(lorebookLimits.content),
    enabled: z.boolean(),
    constant: z.boolean().describe('Always in, within the budget'),
    case_sensitive: z.boolean().nullable(),
    match_whole_words: z.boolean().nullable(),
    insertion_order: z.number().int().describe('Lower goes earlier'),
    priority: z.number().int().describe('Over the budget, lower is dropped first'),
    position: z.enum(['before_character', 'after_character', 'at_depth']),
    depth: z.number().int().min(0).max(lorebookLimits.depth),
    role: z.enum(['system', 'user', 'assistant']),
    exclude_recursion: z.boolean(),
    prevent_recursion: z.boolean(),
    scan_depth: z.number().int().min(0).max(lorebookLimits.scanDepth).nullable(),
    extensions,
  })
  .partial()
  .strict();

export const lorebookSettingsSchema = z
  .object({
    name: text(lorebookLimits.name),
    description: text(lorebookLimits.content),
    scan_depth: z.number().int().min(0).max(lorebookLimits.scanDepth),
    token_budget_share: z.number().gt(0).max(1).describe('The share of the context activated entries may take'),
    recursive_scanning: z.boolean(),
    max_recursion_steps: z.number().int().min(0).max(lorebookLimits.recursionSteps),
    extensions,
  })
  .partial()
  .strict();

export function lorebookEntryInput(body: z.infer<typeof lorebookEntrySchema>): LorebookEntryInput {
  const input: LorebookEntryInput = {
    name: body.name,
    keys: body.keys,
    secondaryKeys: body.secondary_keys,
    secondaryLogic: body.secondary_logic,
    content: body.content,
    enabled: body.enabled,
    constant: body.constant,
    caseSensitive: body.case_sensitive,
    matchWholeWords: body.match_whole_words,
    insertionOrder: body.insertion_order,
    priority: body.priority,
    position: body.position,
    depth: body.depth,
    role: body.role,
    excludeRecursion: body.exclude_recursion,
    preventRecursion: body.prevent_recursion,
    scanDepth: body.scan_depth,
    extensionsJson: body.extensions === undefined ? undefined : JSON.stringify(body.extensions),
  };
  return Object.fromEntries(Object.entries(input).filter(([, value]) => value !== undefined));
}

export function lorebookSettingsChange(body: z.infer<typeof lorebookSettingsSchema>): Partial<LorebookSettings> {
  const change: Partial<LorebookSettings> = {
    name: body.name,
    description: body.description,
    scanDepth: body.scan_depth,
    tokenBudgetShare: body.token_budget_share,
    recursiveScanning: body.recursive_scanning,
    maxRecursionSteps: body.max_recursion_steps,
    extensionsJson: body.extensions === undefined ? undefined : JSON.stringify(body.extensions),
  };
  return Object.fromEntries(Object.entries(change).filter(([, value]) => value !== undefined));
}

export function lorebookEntryFields(entry: LorebookEntry) {
  return {
    id: entry.id,
    name: entry.name,
    keys: entry.keys,
    secondary_keys: entry.secondaryKeys,
    secondary_logic: entry.secondaryLogic,
    content: entry.content,
    enabled: entry.enabled,
    constant: entry.constant,
    case_sensitive: entry.caseSensitive,
    match_whole_words: entry.matchWholeWords,
    insertion_order: entry.insertionOrder,
    priority: entry.priority,
    position: entry.position,
    depth: entry.depth,
    role: entry.role,
    exclude_recursion: entry.excludeRecursion,
    prevent_recursion: entry.preventRecursion,
    scan_depth: entry.scanDepth,
    extensions: JSON.parse(entry.extensionsJson) as Record<string, unknown>,
  };
}

export function lorebookSettingsFields(settings: LorebookSettings) {
  return {
    name: settings.name,
    description: settings.description,
    scan_depth: settings.scanDepth,
    token_budget_share: settings.tokenBudgetShare,
    recursive_scanning: settings.recursiveScanning,
    max_recursion_steps: settings.maxRecursionSteps,
    extensions: JSON.parse(settings.extensionsJson) as Record<string, unknown>,
  };
}
