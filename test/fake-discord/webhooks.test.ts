/**
 * Channel webhooks through the real discord.js Client and WebhookClient: the MANAGE_WEBHOOKS
 * check, name rules and the 15-per-channel limit, execute with overrides, `wait` and `thread_id`,
 * edits, deletion (10015), per-webhook rate limits, gateway events and voice-message rules.
 */
import {
  AttachmentBuilder,
  ChannelType,
  DiscordAPIError,
  Events,
  MessageFlags,
  PermissionFlagsBits,
  WebhookClient,
  type Message,
  type TextChannel,
} from 'discord.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_BOT_PERMISSIONS } from '../fakes/discord/permissions.js';
import { startWithClient } from './harness.js';

async function rejection(promise: Promise<unknown>): Promise<DiscordAPIError> {
  const error: unknown = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  if (!(error instanceof DiscordAPIError)) throw new Error(`expected a DiscordAPIError, got ${String(error)}`);
  return error;
}

describe('fake Discord webhooks', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  let general: TextChannel;
  const webhookClients: WebhookClient[] = [];

  const webhookClient = (id: string, token: string): WebhookClient => {
    const client = new WebhookClient({ id, token }, { rest: setup.fake.restOptions });
    webhookClients.push(client);
    return client;
  };

  const newChannel = async (name: string): Promise<TextChannel> => {
    const created = setup.fake.createTextChannel(setup.fake.guild.id, name);
    setup.fake.setManageWebhooks(created.id, true);
    const channel = await setup.client.channels.fetch(created.id);
    if (channel?.type !== ChannelType.GuildText) throw new Error(`${name} did not reach the client`);
    return channel;
  };

  beforeAll(async () => {
    // Fifteen creates in one channel would wait out the 5-per-5-s management bucket; lift it here.
    setup = await startWithClient({ rateLimits: { retryAfterHeader: 'fractional', buckets: { 'webhook-manage': { limit: 100, windowMs: 1000 } } } });
    const channel = setup.client.channels.cache.get(setup.fake.guild.textChannelId);
    if (channel?.type !== ChannelType.GuildText) throw new Error('general is missing');
    general = channel;
  });
  afterEach(() => setup.fake.setManageWebhooks(general.id, false));
  afterAll(async () => {
    for (const client of webhookClients) client.destroy();
    await setup.stop();
  });

  it('refuses to create or list webhooks without MANAGE_WEBHOOKS (403, 50013)', async () => {
    const created = await rejection(general.createWebhook({ name: 'Likeness' }));
    expect([created.status, created.code, created.message]).toEqual([403, 50013, 'Missing Permissions']);
    const listed = await rejection(general.fetchWebhooks());
    expect([listed.status, listed.code]).toEqual([403, 50013]);
  });

  it('creates, lists, fetches and deletes a webhook the bot owns', async () => {
    setup.fake.setManageWebhooks(general.id, true);
    const webhook = await general.createWebhook({ name: 'Likeness' });
    expect(webhook.token).toMatch(/^[\w-]{60,}$/);
    expect(webhook.channelId).toBe(general.id);
    expect(webhook.applicationId).toBe(setup.fake.applicationId);
    expect(webhook.owner?.id).toBe(setup.fake.botUser.id);
    const listed = await general.fetchWebhooks();
    expect([...listed.keys()]).toEqual([webhook.id]);
    const fetched = await setup.client.fetchWebhook(webhook.id, webhook.token!);
    expect(fetched.name).toBe('Likeness');
    await webhook.delete();
    expect((await general.fetchWebhooks()).size).toBe(0);
    const gone = await rejection(setup.client.fetchWebhook(webhook.id));
    expect([gone.status, gone.code, gone.message]).toEqual([404, 10015, 'Unknown Webhook']);
  });

  it('applies the name rules and the limit of 15 webhooks per channel', async () => {
    const channel = await newChannel('crowded');
    for (const name of ['', 'x'.repeat(81), 'My Discord helper', 'clyde']) {
      const error = await rejection(channel.createWebhook({ name }));
      expect([error.status, error.code]).toEqual([400, 50035]);
    }
    for (let index = 0; index < 15; index += 1) await channel.createWebhook({ name: `persona ${index}` });
    const full = await rejection(channel.createWebhook({ name: 'one too many' }));
    expect([full.status, full.code, full.message]).toEqual([400, 30007, 'Maximum number of webhooks reached (15)']);
    // A thread has no webhooks of its own.
    const thread = await channel.threads.create({ name: 'scene' });
    const fromThread = await rejection(setup.client.rest.post(`/channels/${thread.id}/webhooks`, { body: { name: 'x' } }));
    expect(fromThread.code).toBe(50024);
  });

  it('executes with username and avatar overrides; the message and its gateway event show them', async () => {
    const channel = await newChannel('persona-room');
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const created = new Promise<Message>((resolve) => setup.client.once(Events.MessageCreate, resolve));
    const sender = webhookClient(webhook.id, webhook.token!);
    const sent = await sender.send({ content: 'Hello, I am Ada.', username: 'Ada Lovelace', avatarURL: 'https://example.org/ada.png' });
    expect(sent).toMatchObject({ webhook_id: webhook.id, application_id: setup.fake.applicationId, author: { id: webhook.id, username: 'Ada Lovelace', bot: true } });
    const stored = setup.fake.message(sent.id);
    expect(stored).toMatchObject({ content: 'Hello, I am Ada.', guild_id: setup.fake.guild.id, author: { username: 'Ada Lovelace' } });
    expect(stored?.author.avatar).toMatch(/^[0-9a-f]{32}$/);
    const seen = await created;
    expect([seen.id, seen.webhookId, seen.author.username, seen.author.bot, seen.member]).toEqual([sent.id, webhook.id, 'Ada Lovelace', true, null]);

    // Without overrides the webhook's own name shows.
    expect((await sender.send({ content: 'plain' })).author.username).toBe('Likeness');
    for (const username of ['', 'y'.repeat(81), 'Clyde the helper', 'DISCORD']) {
      const error = await rejection(sender.send({ content: 'x', username }));
      expect([error.status, error.code]).toEqual([400, 50035]);
    }
  });

  it('answers 204 to wait=false, and needs no Authorization header', async () => {
    const channel = await newChannel('no-wait');
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const url = `${setup.fake.restOptions.api}/v10/webhooks/${webhook.id}/${webhook.token}`;
    const response = await fetch(`${url}?wait=false`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ content: 'fire and forget' }) });
    expect(response.status).toBe(204);
    expect(setup.fake.messages(channel.id).at(-1)?.content).toBe('fire and forget');
    const wrongToken = await fetch(`${setup.fake.restOptions.api}/v10/webhooks/${webhook.id}/not-the-token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content":"x"}' });
    expect([wrongToken.status, ((await wrongToken.json()) as { code: number }).code]).toEqual([401, 50027]);
  });

  it('posts into a thread with thread_id and edits there; the same message without thread_id is unknown', async () => {
    const channel = await newChannel('scenes');
    const thread = await channel.threads.create({ name: 'tea party' });
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const sender = webhookClient(webhook.id, webhook.token!);
    const sent = await sender.send({ content: 'In the thread', username: 'Ada', threadId: thread.id });
    expect(sent.channel_id).toBe(thread.id);
    const updated = new Promise<Message>((resolve) => setup.client.once(Events.MessageUpdate, (_old, next) => resolve(next as Message)));
    const edited = await sender.editMessage(sent.id, { content: 'In the thread, edited', threadId: thread.id });
    expect(edited).toMatchObject({ content: 'In the thread, edited', author: { username: 'Ada' } });
    expect((await updated).webhookId).toBe(webhook.id);
    expect(setup.fake.messageHistory(sent.id).map((version) => version.content)).toEqual(['In the thread', 'In the thread, edited']);
    const unknown = await rejection(sender.editMessage(sent.id, { content: 'lost' }));
    expect([unknown.status, unknown.code]).toEqual([404, 10008]);
    const otherChannel = await newChannel('elsewhere');
    const foreign = await rejection(sender.send({ content: 'x', threadId: otherChannel.id }));
    expect(foreign.code).toBe(10003);
    await sender.deleteMessage(sent.id, thread.id);
    expect(setup.fake.message(sent.id)).toBeUndefined();
  });

  it('takes components from the application’s webhooks always, from a person’s only with with_components and never interactive ones', async () => {
    const channel = await newChannel('components');
    const button = { type: 1, components: [{ type: 2, style: 2, custom_id: 'again', label: 'Again' }] };
    const link = { type: 1, components: [{ type: 2, style: 5, url: 'https://likeness.example', label: 'Site' }] };
    const owned = await channel.createWebhook({ name: 'Likeness' });
    const ownedSender = webhookClient(owned.id, owned.token!);
    const fromApplication = await ownedSender.send({ content: 'with a button', components: [button] });
    expect(fromApplication.components).toHaveLength(1);
    expect((await ownedSender.editMessage(fromApplication.id, { components: [] })).components).toEqual([]);
    expect((await ownedSender.editMessage(fromApplication.id, { components: [button] })).components).toHaveLength(1);

    const personal = setup.fake.createUserWebhook(channel.id, 'Captain Hook');
    const personalSender = webhookClient(personal.id, personal.token);
    const ignored = await personalSender.send({ content: 'no button here', components: [button] });
    expect(ignored.components ?? []).toEqual([]);
    expect(ignored.application_id ?? null).toBeNull();
    const refused = await rejection(personalSender.send({ content: 'x', components: [button], withComponents: true }));
    expect([refused.status, refused.code]).toEqual([400, 50035]);
    const linked = await personalSender.send({ content: 'a link', components: [link], withComponents: true });
    expect(linked.components).toHaveLength(1);
    const stillIgnored = await personalSender.editMessage(linked.id, { components: [] });
    expect(stillIgnored.components).toHaveLength(1);
  });

  it('answers 10015 Unknown Webhook after deletion, by id and token', async () => {
    const channel = await newChannel('short-lived');
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const sender = webhookClient(webhook.id, webhook.token!);
    const sent = await sender.send({ content: 'before' });
    await sender.delete();
    expect(setup.fake.webhooks(channel.id).map((record) => record.deleted)).toEqual([true]);
    for (const attempt of [() => sender.send({ content: 'after' }), () => sender.editMessage(sent.id, { content: 'after' }), () => sender.fetchMessage(sent.id)]) {
      const error = await rejection(attempt());
      expect([error.status, error.code]).toEqual([404, 10015]);
    }
  });

  it('limits each webhook to 5 executes per 2 s with Discord’s headers; another webhook has its own bucket', async () => {
    const channel = await newChannel('busy');
    const first = await channel.createWebhook({ name: 'Likeness' });
    const second = await channel.createWebhook({ name: 'Likeness 2' });
    const execute = (id: string, token: string): Promise<Response> =>
      fetch(`${setup.fake.restOptions.api}/v10/webhooks/${id}/${token}?wait=true`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"content":"tick"}' });
    const answers: Response[] = [];
    for (let index = 0; index < 6; index += 1) answers.push(await execute(first.id, first.token!));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(answers[0]!.headers.get('x-ratelimit-limit')).toBe('5');
    expect(answers[4]!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(answers[0]!.headers.get('x-ratelimit-bucket')).toMatch(/^[0-9a-f]{32}$/);
    const refused = answers[5]!;
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(((await refused.json()) as { retry_after: number; global: boolean }).global).toBe(false);
    expect((await execute(second.id, second.token!)).status).toBe(200);
    expect(setup.fake.rateLimitHits.byRoute['POST /webhooks/{webhook.id}/{webhook.token}']).toBe(1);
  });

  it('gives headers @discordjs/rest paces a webhook by, so a burst of executes and edits meets no 429', async () => {
    const channel = await newChannel('paced');
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const sender = webhookClient(webhook.id, webhook.token!);
    const before = setup.fake.rateLimitHits.total;
    const sent = await Promise.all(Array.from({ length: 7 }, (_, index) => sender.send({ content: `burst ${index}`, username: 'Ada' })));
    for (const [index, message] of sent.slice(0, 6).entries()) await sender.editMessage(message.id, { content: `burst ${index}, edited` });
    expect(setup.fake.rateLimitHits.total - before).toBe(0);
    expect(setup.fake.messages(channel.id)).toHaveLength(7);
  });

  it('accepts a voice message only as Discord does: one Ogg file with duration and waveform, no content, SEND_VOICE_MESSAGES', async () => {
    const channel = await newChannel('voice-notes');
    const webhook = await channel.createWebhook({ name: 'Likeness' });
    const sender = webhookClient(webhook.id, webhook.token!);
    const waveform = Buffer.alloc(64, 128).toString('base64');
    const ogg = (): AttachmentBuilder => new AttachmentBuilder(Buffer.from('OggS fake opus'), { name: 'voice-message.ogg' }).setDuration(1.5).setWaveform(waveform);
    const voice = { files: [ogg()], flags: MessageFlags.IsVoiceMessage } as const;

    const noPermission = await rejection(sender.send(voice));
    expect([noPermission.status, noPermission.code]).toEqual([403, 50013]);
    setup.fake.setBotPermissions(channel.id, DEFAULT_BOT_PERMISSIONS | PermissionFlagsBits.ManageWebhooks | PermissionFlagsBits.SendVoiceMessages);

    const withContent = await rejection(sender.send({ ...voice, files: [ogg()], content: 'hi' }));
    expect(withContent.code).toBe(50159);
    const twoFiles = await rejection(sender.send({ ...voice, files: [ogg(), ogg()] }));
    expect(twoFiles.code).toBe(50160);
    const noWaveform = await rejection(sender.send({ ...voice, files: [new AttachmentBuilder(Buffer.from('OggS fake opus'), { name: 'voice-message.ogg' }).setDuration(1)] }));
    expect(noWaveform.code).toBe(50161);

    const sent = await sender.send({ ...voice, files: [ogg()], username: 'Ada' });
    expect(sent.flags! & MessageFlags.IsVoiceMessage).toBe(MessageFlags.IsVoiceMessage);
    expect(sent.attachments[0]).toMatchObject({ content_type: 'audio/ogg', duration_secs: 1.5, waveform });
    const edit = await rejection(sender.editMessage(sent.id, { content: 'words' }));
    expect(edit.code).toBe(50162);
  });
});
