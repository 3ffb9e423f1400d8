/**
 * A real discord.js Client logged in to a fake Discord, as the bot's end-to-end tests will use it.
 */
import { once } from 'node:events';
import { Client, Events, GatewayIntentBits, Partials, type ClientOptions } from 'discord.js';
import { startFakeDiscord, type FakeDiscord, type StartFakeDiscordOptions } from '../fakes/discord/fake-discord.js';

export const ALL_TEST_INTENTS = [
  GatewayIntentBits.Guilds,
  GatewayIntentBits.GuildMessages,
  GatewayIntentBits.MessageContent,
  GatewayIntentBits.DirectMessages,
];

/** Logs a client in to `fake` and waits for `clientReady`. */
export async function loginClient(fake: FakeDiscord, options: Partial<ClientOptions> = {}): Promise<Client> {
  const client = new Client({
    intents: ALL_TEST_INTENTS,
    // DMs arrive for channels the client has never cached; Discord needs the partial too.
    partials: [Partials.Channel],
    ...options,
    rest: { ...fake.restOptions, ...options.rest },
  });
  const ready = once(client, Events.ClientReady);
  await client.login(fake.token);
  await ready;
  return client;
}

/** A fake with a logged-in client and one ordinary user. */
export async function startWithClient(
  options: StartFakeDiscordOptions = {},
  clientOptions: Partial<ClientOptions> = {},
): Promise<{ fake: FakeDiscord; client: Client; user: ReturnType<FakeDiscord['createUser']>; stop(): Promise<void> }> {
  const fake = await startFakeDiscord(options);
  const user = fake.createUser({ username: 'alice' });
  const client = await loginClient(fake, clientOptions);
  return {
    fake,
    client,
    user,
    async stop() {
      await client.destroy();
      await fake.close();
    },
  };
}
