/**
 * Application commands: Discord's validation of command definitions (names, descriptions,
 * option order and counts) and the stored form with ids. A bulk overwrite keeps the id of a
 * command whose name and type stay the same, as Discord does, and bumps its version.
 */
import { ApplicationCommandOptionType, ApplicationCommandType, type APIApplicationCommand } from 'discord-api-types/v10';
import { invalidFormBody, type FieldProblem } from './errors.js';
import type { SnowflakeFactory } from './snowflake.js';

type JsonObject = Record<string, unknown>;
const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value);

const namePattern = /^[-_'\p{L}\p{N}\p{sc=Deva}\p{sc=Thai}]{1,32}$/u;
const nameProblem = (path: Array<string | number>): FieldProblem => ({
  path,
  code: 'APPLICATION_COMMAND_INVALID_NAME',
  message: 'Command name is invalid',
});
const lengthProblem = (path: Array<string | number>, minimum: number, maximum: number): FieldProblem => ({
  path,
  code: 'BASE_TYPE_BAD_LENGTH',
  message: `Must be between ${minimum} and ${maximum} in length.`,
});

function checkName(value: unknown, path: Array<string | number>, lowercase: boolean, problems: FieldProblem[]): void {
  if (typeof value !== 'string' || !namePattern.test(value) || (lowercase && value !== value.toLowerCase())) problems.push(nameProblem(path));
}

function checkDescription(value: unknown, path: Array<string | number>, problems: FieldProblem[]): void {
  if (typeof value !== 'string' || value.length < 1 || value.length > 100) problems.push(lengthProblem(path, 1, 100));
}

function checkOptions(options: unknown, path: Array<string | number>, problems: FieldProblem[]): void {
  if (options === undefined || options === null) return;
  if (!Array.isArray(options)) {
    problems.push({ path, code: 'BASE_TYPE_LIST', message: 'Must be a list.' });
    return;
  }
  if (options.length > 25) problems.push({ path, code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 25 or fewer in length.' });
  let seenOptional = false;
  options.forEach((option: unknown, index) => {
    const here = [...path, index];
    if (!isObject(option)) return;
    checkName(option['name'], [...here, 'name'], true, problems);
    checkDescription(option['description'], [...here, 'description'], problems);
    const type = option['type'];
    if (typeof type !== 'number' || type < 1 || type > 11) {
      problems.push({ path: [...here, 'type'], code: 'BASE_TYPE_CHOICES', message: 'Value must be one of (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11).' });
    }
    if (type === ApplicationCommandOptionType.Subcommand || type === ApplicationCommandOptionType.SubcommandGroup) {
      checkOptions(option['options'], [...here, 'options'], problems);
      return;
    }
    if (option['required'] === true && seenOptional) {
      problems.push({ path: here, code: 'APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID', message: 'Required options must be placed before non-required options' });
    }
    if (option['required'] !== true) seenOptional = true;
    if (Array.isArray(option['choices']) && option['choices'].length > 25) {
      problems.push({ path: [...here, 'choices'], code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 25 or fewer in length.' });
    }
  });
}

/** Validates one command definition, adding problems under `path`. */
function checkCommand(command: unknown, path: Array<string | number>, problems: FieldProblem[]): void {
  if (!isObject(command)) {
    problems.push({ path, code: 'MODEL_TYPE_CONVERT', message: 'Only dictionaries may be used in a ModelType' });
    return;
  }
  const type = command['type'] ?? ApplicationCommandType.ChatInput;
  const chatInput = type === ApplicationCommandType.ChatInput;
  checkName(command['name'], [...path, 'name'], chatInput, problems);
  if (chatInput) {
    checkDescription(command['description'], [...path, 'description'], problems);
    checkOptions(command['options'], [...path, 'options'], problems);
  }
}

/**
 * Validates and stores a bulk overwrite. `current` is the list being replaced; the answer
 * is the new list, which the caller stores in its place.
 */
export function overwriteCommands(
  body: unknown,
  current: APIApplicationCommand[],
  ids: SnowflakeFactory,
  applicationId: string,
  guildId: string | null,
): APIApplicationCommand[] {
  if (!Array.isArray(body)) throw invalidFormBody([{ path: [], code: 'BASE_TYPE_LIST', message: 'Must be a list.' }]);
  const problems: FieldProblem[] = [];
  if (body.length > 100) problems.push({ path: [], code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 100 or fewer in length.' });
  const seen = new Set<string>();
  body.forEach((command: unknown, index) => {
    checkCommand(command, [index], problems);
    if (!isObject(command)) return;
    const key = `${String(command['type'] ?? 1)}:${String(command['name'])}`;
    if (seen.has(key)) problems.push({ path: [index, 'name'], code: 'APPLICATION_COMMANDS_DUPLICATE_NAME', message: 'Application command names must be unique' });
    seen.add(key);
  });
  if (problems.length > 0) throw invalidFormBody(problems);
  return (body as JsonObject[]).map((definition) => storedCommand(definition, current, ids, applicationId, guildId));
}

/** The stored (and answered) form of a definition. */
export function storedCommand(
  definition: JsonObject,
  current: APIApplicationCommand[],
  ids: SnowflakeFactory,
  applicationId: string,
  guildId: string | null,
): APIApplicationCommand {
  const type = (definition['type'] as ApplicationCommandType | undefined) ?? ApplicationCommandType.ChatInput;
  const previous = current.find((command) => command.name === definition['name'] && command.type === type);
  return {
    ...(definition as Partial<APIApplicationCommand>),
    id: previous?.id ?? ids.next(),
    application_id: applicationId,
    version: ids.next(),
    type,
    name: String(definition['name']),
    description: typeof definition['description'] === 'string' ? definition['description'] : '',
    default_member_permissions: (definition['default_member_permissions'] as string | null | undefined) ?? null,
    nsfw: definition['nsfw'] === true,
    integration_types: (definition['integration_types'] as APIApplicationCommand['integration_types']) ?? [0],
    contexts: (definition['contexts'] as APIApplicationCommand['contexts']) ?? null,
    ...(guildId === null ? {} : { guild_id: guildId }),
  } as APIApplicationCommand;
}

/** Validates a single command for `POST .../commands` (create or replace by name). */
export function validateCommand(body: unknown): JsonObject {
  const problems: FieldProblem[] = [];
  checkCommand(body, [], problems);
  if (problems.length > 0) throw invalidFormBody(problems);
  return body as JsonObject;
}
