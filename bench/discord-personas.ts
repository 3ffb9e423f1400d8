import { benchmarkDiscordStreams } from './discord-streams.js';

/**
 * Issue 13's benchmark: benchmark 5 with characters answering as themselves. 100 persona
 * replies stream at once in threads under 20 parent channels, five threads sharing each
 * channel's webhook and so its rate-limit bucket (Discord limits webhooks per webhook, not per
 * thread). Run beside `discord` (`npx tsx bench/run.ts discord discord-personas`) for the
 * figures of the bot answering as itself.
 */
export function benchmarkDiscordPersonas(dataDir: string) {
  return benchmarkDiscordStreams(dataDir, { channels: 20, personas: true });
}
