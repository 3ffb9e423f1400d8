import { z } from 'zod';
import { characterLimits } from '../core/characters.js';
import type { LorebookEntryInput } from '../core/lorebooks.js';
import { lorebookLimits } from '../core/lorebooks.js';
import type { LorebookEntry, LorebookSettings } from '../core/lorebook/lorebook.js';
import type { CharacterDefinition } from '../core/records.js';

/**
 * The Character resource's fields beyond the seed's, in the API's snake_case (as the card
 * formats and the seed's own fields are), both ways; and the lorebook's. A table of names per
 * record maps them both ways (`extensions` aside: JSON text in the record, an object here), and
 * the request schemas, which the OpenAPI document is made from, must name the same fields.
 */

/** A record with the card's `extensions` kept as JSON text. */
interface WithExtensions {
  extensionsJson: string;
}

/** The API's name of each of a record's fields: all of them but `extensionsJson` and those `Without`. */
type Names<Record, Without extends keyof Record = never> = { readonly [Own in Exclude<keyof Record, 'extensionsJson' | Without>]: string };

/** A record's fields under the API's names, `extensions` an object. */
type ApiFields<Record, Table> = { -readonly [Own in keyof Table & keyof Record as Table[Own] & string]: Record[Own] } & { extensions: { [key: string]: unknown } };

/** The record's fields under the API's names. */
function apiFields<Record extends WithExtensions, const Table extends Partial<Names<Record>>>(names: Table, record: Record): ApiFields<Record, Table> {
  const fields: { [api: string]: unknown } = {};
  for (const [own, api] of Object.entries(names)) fields[api as string] = record[own as keyof Record];
  fields.extensions = JSON.parse(record.extensionsJson);
  return fields as ApiFields<Record, Table>;
}

/** The fields a request named, under the record's names; those it did not name are left out. */
function recordChange<Record extends WithExtensions, const Table extends Partial<Names<Record>>>(names: Table, body: Partial<ApiFields<Record, Table>>): Partial<Record> {
  const change: { [own: string]: unknown } = {};
  const named: { [api: string]: unknown } = body;
  for (const [own, api] of Object.entries(names)) if (named[api as string] !== undefined) change[own] = named[api as string];
  if (body.extensions !== undefined) change.extensionsJson = JSON.stringify(body.extensions);
  return change as Partial<Record>;
}

const definitionNames = {
  nickname: 'nickname',
  scenario: 'scenario',
  firstMessage: 'first_message',
  alternateGreetings: 'alternate_greetings',
  groupOnlyGreetings: 'group_only_greetings',
  exampleDialogue: 'example_dialogue',
  systemPrompt: 'system_prompt',
  postHistoryInstructions: 'post_history_instructions',
  creatorNotes: 'creator_notes',
  tags: 'tags',
  creator: 'creator',
  characterVersion: 'character_version',
} as const satisfies Names<CharacterDefinition>;

/** An entry's `id` is the resource's, answered but never changed through its fields. */
const lorebookEntryNames = {
  name: 'name',
  keys: 'keys',
  secondaryKeys: 'secondary_keys',
  secondaryLogic: 'secondary_logic',
  content: 'content',
  enabled: 'enabled',
  constant: 'constant',
  caseSensitive: 'case_sensitive',
  matchWholeWords: 'match_whole_words',
  insertionOrder: 'insertion_order',
  priority: 'priority',
  position: 'position',
  depth: 'depth',
  role: 'role',
  excludeRecursion: 'exclude_recursion',
  preventRecursion: 'prevent_recursion',
  scanDepth: 'scan_depth',
} as const satisfies Names<LorebookEntry, 'id'>;

const lorebookSettingsNames = {
  name: 'name',
  description: 'description',
  scanDepth: 'scan_depth',
  tokenBudgetShare: 'token_budget_share',
  recursiveScanning: 'recursive_scanning',
  maxRecursionSteps: 'max_recursion_steps',
} as const satisfies Names<LorebookSettings>;

/** A request schema's fields: exactly the table's API names and `extensions`. */
type SchemaOf<Table extends { [own: string]: string }> = { [Api in Table[keyof Table] | 'extensions']: z.ZodType };

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
} satisfies SchemaOf<typeof definitionNames>;

export function definitionFields(definition: CharacterDefinition) {
  return apiFields(definitionNames, definition);
}

type DefinitionBody = Partial<{ [Key in keyof typeof definitionSchema]: z.infer<(typeof definitionSchema)[Key]> }>;

/** The definition fields a request named; the others stay as they are. */
export function definitionChange(body: DefinitionBody): Partial<CharacterDefinition> {
  return recordChange(definitionNames, body);
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
  } satisfies SchemaOf<typeof lorebookEntryNames>)
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
  } satisfies SchemaOf<typeof lorebookSettingsNames>)
  .partial()
  .strict();

export function lorebookEntryInput(body: z.infer<typeof lorebookEntrySchema>): LorebookEntryInput {
  return recordChange(lorebookEntryNames, body);
}

export function lorebookSettingsChange(body: z.infer<typeof lorebookSettingsSchema>): Partial<LorebookSettings> {
  return recordChange(lorebookSettingsNames, body);
}

export function lorebookEntryFields(entry: LorebookEntry) {
  return { id: entry.id, ...apiFields(lorebookEntryNames, entry) };
}

export function lorebookSettingsFields(settings: LorebookSettings) {
  return apiFields(lorebookSettingsNames, settings);
}
