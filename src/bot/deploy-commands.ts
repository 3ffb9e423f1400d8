/**
 * `npm run deploy-commands`: registers the slash commands with Discord, globally (can take
 * up to an hour to appear) or, with DISCORD_GUILD_ID, in one guild at once.
 */
import { pathToFileURL } from 'node:url';
import { REST, type RESTGetCurrentApplicationResult, Routes } from 'discord.js';
import { commands } from '../../commands/index.js';
import { ConfigError, parseConfig } from '../config.js';

export async function deployCommands(options: { token: string; apiBase?: string | undefined; guildId?: string | undefined }): Promise<{ scope: string; names: string[] }> {
  const rest = new REST({ version: '10', ...(options.apiBase ? { api: options.apiBase } : {}) }).setToken(options.token);
  const application = (await rest.get(Routes.currentApplication())) as RESTGetCurrentApplicationResult;
  const body = commands.map((command) => command.data);
  const route = options.guildId ? Routes.applicationGuildCommands(application.id, options.guildId) : Routes.applicationCommands(application.id);
  await rest.put(route, { body });
  return { scope: options.guildId ? `guild ${options.guildId}` : 'global', names: body.map((command) => command.name) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const config = parseConfig(process.env);
    if (!config.discord.token) throw new ConfigError(['DISCORD_TOKEN is required to deploy commands']);
    const result = await deployCommands({ token: config.discord.token, apiBase: config.discord.apiBase, guildId: config.discord.guildId });
    process.stdout.write(`Registered ${result.names.length} commands (${result.scope}): ${result.names.map((name) => `/${name}`).join(' ')}\n`);
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
