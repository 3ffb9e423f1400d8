/**
 * Application routes: gateway discovery, the application itself, and global and guild command
 * registration (bulk overwrite, create, read, delete).
 */
import type { APIApplicationCommand } from 'discord-api-types/v10';
import type { FakeContext } from '../context.js';
import { DiscordHttpError, unknownApplicationCommand, unknownGuild } from '../errors.js';
import { overwriteCommands, storedCommand, validateCommand } from '../commands.js';
import type { RouteAnswer, RouteDefinition, RouteRequest } from '../router.js';

const missingAccess = (): DiscordHttpError => new DiscordHttpError(403, { message: 'Missing Access', code: 50001 });

/** The command list a path names, checking the application and guild ids. */
function commandList(request: RouteRequest, context: FakeContext): { list: APIApplicationCommand[]; guildId: string | null; replace(next: APIApplicationCommand[]): void } {
  if (request.param('application.id') !== context.applicationId) throw missingAccess();
  const guildId = request.param('guild.id', '');
  if (guildId === '') {
    const list = context.state.globalCommands;
    return { list, guildId: null, replace: (next) => list.splice(0, list.length, ...next) };
  }
  if (context.state.guilds.get(guildId)?.members.has(context.bot.id) !== true) throw unknownGuild();
  const list = context.state.guildCommands.get(guildId) ?? [];
  return { list, guildId, replace: (next) => context.state.guildCommands.set(guildId, next) };
}

function bulkOverwrite(request: RouteRequest, context: FakeContext): RouteAnswer {
  const target = commandList(request, context);
  const next = overwriteCommands(request.body, target.list, context.state.ids, context.applicationId, target.guildId);
  target.replace(next);
  context.state.changed();
  return { status: 200, body: next };
}

function createCommand(request: RouteRequest, context: FakeContext): RouteAnswer {
  const target = commandList(request, context);
  const definition = validateCommand(request.body);
  const command = storedCommand(definition, target.list, context.state.ids, context.applicationId, target.guildId);
  const existing = target.list.findIndex((candidate) => candidate.id === command.id);
  const next = [...target.list];
  if (existing === -1) next.push(command);
  else next[existing] = command;
  target.replace(next);
  context.state.changed();
  return { status: existing === -1 ? 201 : 200, body: command };
}

function findCommandAnswer(request: RouteRequest, context: FakeContext): RouteAnswer {
  const command = commandList(request, context).list.find((candidate) => candidate.id === request.param('command.id'));
  if (command === undefined) throw unknownApplicationCommand();
  return { status: 200, body: command };
}

function deleteCommand(request: RouteRequest, context: FakeContext): RouteAnswer {
  const target = commandList(request, context);
  const next = target.list.filter((candidate) => candidate.id !== request.param('command.id'));
  if (next.length === target.list.length) throw unknownApplicationCommand();
  target.replace(next);
  context.state.changed();
  return { status: 204 };
}

function gatewayBot(_request: RouteRequest, context: FakeContext): RouteAnswer {
  return {
    status: 200,
    body: {
      url: context.urls.gateway(),
      shards: context.sharding.recommendedShards,
      session_start_limit: context.sharding.sessionStartLimit(),
    },
  };
}

function application(_request: RouteRequest, context: FakeContext): RouteAnswer {
  return {
    status: 200,
    body: {
      id: context.applicationId,
      name: context.bot.username,
      icon: null,
      description: '',
      summary: '',
      type: null,
      bot: context.bot,
      bot_public: false,
      bot_require_code_grant: false,
      verify_key: '0'.repeat(64),
      flags: 0,
      team: null,
      owner: { id: context.state.guilds.values().next().value?.ownerId ?? context.bot.id, username: 'owner', discriminator: '0', global_name: null, avatar: null },
      tags: [],
      approximate_guild_count: context.state.guilds.size,
      integration_types_config: { '0': {} },
      redirect_uris: [],
      interactions_endpoint_url: null,
    },
  };
}

const global = '/applications/{application.id}/commands';
const guild = '/applications/{application.id}/guilds/{guild.id}/commands';

export const applicationRoutes: RouteDefinition[] = [
  { method: 'GET', path: '/gateway/bot', auth: true, bucket: 'gateway-read', handle: gatewayBot },
  { method: 'GET', path: '/gateway', auth: false, bucket: 'gateway-read', handle: (request, context) => ({ status: 200, body: { url: context.urls.gateway() } }) },
  { method: 'GET', path: '/applications/@me', auth: true, bucket: 'user-read', handle: application },
  ...[global, guild].flatMap((path): RouteDefinition[] => [
    { method: 'GET', path, auth: true, bucket: 'commands-read', handle: (request, context) => ({ status: 200, body: commandList(request, context).list }) },
    { method: 'PUT', path, auth: true, bucket: 'commands-write', handle: bulkOverwrite },
    { method: 'POST', path, auth: true, bucket: 'commands-write', handle: createCommand },
    { method: 'GET', path: `${path}/{command.id}`, auth: true, bucket: 'commands-read', handle: findCommandAnswer },
    { method: 'DELETE', path: `${path}/{command.id}`, auth: true, bucket: 'commands-write', handle: deleteCommand },
  ]),
];
