// One bot shard, as discord.js's ShardingManager forks it (mode 'process'): the manager passes
// SHARDS, SHARD_COUNT and DISCORD_TOKEN by env, which Client and login() read themselves; the
// fake's REST and CDN bases come as arguments. Plain JavaScript, because the manager forks plain
// node. It answers every user message with the shard that heard it, so a test can tell who
// answered from the fake alone.
import { Client, Events, GatewayIntentBits, Partials } from 'discord.js';

const [api, cdn] = process.argv.slice(2);
if (api === undefined || cdn === undefined) throw new Error('usage: shard-process.mjs <rest api base> <cdn base>');

const client = new Client({
  intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages, GatewayIntentBits.MessageContent, GatewayIntentBits.DirectMessages],
  partials: [Partials.Channel],
  rest: { api, cdn, version: '10' },
});
client.on(Events.MessageCreate, async (message) => {
  if (message.author.bot) return;
  await message.channel.send(`shard ${client.shard?.ids.join(',')} of ${client.shard?.count} heard: ${message.content}`);
});
await client.login();
