/**
 * The real discord.js Client logs in to the fake, sees its guild, and survives dropped gateway
 * connections by resuming (or identifying again when the session is gone).
 */
import { once } from 'node:events';
import { ChannelType, Events, GatewayIntentBits, type Message } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginClient, startWithClient } from './harness.js';

describe('fake Discord gateway', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;

  beforeAll(async () => {
    // A short heartbeat interval so the heartbeat test does not wait Discord's 41 s.
    // Several clients log in to this fake one after another; Discord would start them 5 s apart
    // (identify buckets), which sharding.test.ts covers. Off here to keep these tests quick.
    setup = await startWithClient({ heartbeatIntervalMs: 250, sharding: { identifyBucketMs: 0 } });
  });
  afterAll(() => setup.stop());

  it('logs the client in and hands it the guild with channels, roles and the bot member', () => {
    const { client, fake } = setup;
    expect(client.user?.id).toBe(fake.botUser.id);
    expect(client.application?.id).toBe(fake.applicationId);
    const guild = client.guilds.cache.get(fake.guild.id);
    expect(guild?.available).toBe(true);
    expect(guild?.members.me?.id).toBe(fake.botUser.id);
    expect(guild?.roles.everyone.id).toBe(fake.guild.id);
    expect(guild?.channels.cache.get(fake.guild.textChannelId)?.type).toBe(ChannelType.GuildText);
    expect(guild?.channels.cache.find((channel) => channel.type === ChannelType.GuildVoice)?.id).toBe(fake.guild.voiceChannelId);
    expect(fake.gatewayStats.identifies).toBe(1);
  });

  it('acknowledges heartbeats, so the client measures a ping and keeps its connection', async () => {
    const { client, fake } = setup;
    await fake.waitFor((state) => state.gatewayStats.heartbeats >= 3, 5000);
    expect(client.ws.ping).toBeGreaterThanOrEqual(0);
    expect(fake.gatewayStats.connections).toBe(1);
    expect(fake.gatewayStats.openConnections).toBe(1);
  });

  it('sends message events by intent and blanks content without MessageContent', async () => {
    const { fake, user } = setup;
    const limited = await loginClient(fake, { intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildMessages] });
    try {
      const plain = new Promise<Message>((resolve) => limited.once(Events.MessageCreate, resolve));
      fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: 'secret words' });
      expect((await plain).content).toBe('');
      const mention = new Promise<Message>((resolve) => limited.once(Events.MessageCreate, resolve));
      fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: `<@${fake.botUser.id}> hello` });
      expect((await mention).content).toBe(`<@${fake.botUser.id}> hello`);
      let directMessages = 0;
      limited.on(Events.MessageCreate, () => void (directMessages += 1));
      fake.sendMessage({ channelId: fake.openDm(user), author: user, content: 'no DirectMessages intent' });
      fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: 'marker' });
      await new Promise<void>((resolve) => limited.once(Events.MessageCreate, () => resolve()));
      expect(directMessages).toBe(1);
    } finally {
      await limited.destroy();
    }
  });

  it('resumes after the connections drop and still receives later messages', async () => {
    const { client, fake, user } = setup;
    const resumed = once(client, Events.ShardResume);
    fake.dropGatewayConnections();
    await resumed;
    expect(fake.gatewayStats.resumes).toBe(1);
    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: 'after the drop' });
    expect((await received).content).toBe('after the drop');
  });

  it('replays events sent while the client was away', async () => {
    const { client, fake, user } = setup;
    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    const resumed = once(client, Events.ShardResume);
    fake.dropGatewayConnections({ abrupt: true });
    fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: 'while away' });
    await resumed;
    expect((await received).content).toBe('while away');
    expect(fake.gatewayStats.replayedEvents).toBe(1);
  });

  it('identifies again when the session cannot be resumed', async () => {
    const { client, fake, user } = setup;
    const identifiesBefore = fake.gatewayStats.identifies;
    const ready = once(client, Events.ShardReady);
    fake.dropGatewayConnections({ invalidateSessions: true });
    await ready;
    expect(fake.gatewayStats.invalidSessions).toBeGreaterThan(0);
    expect(fake.gatewayStats.identifies).toBe(identifiesBefore + 1);
    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    fake.sendMessage({ channelId: fake.guild.textChannelId, author: user, content: 'new session' });
    expect((await received).content).toBe('new session');
  });
});
