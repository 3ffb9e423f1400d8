/**
 * The persona sender (src/bot/personas/webhook-personas.ts) against the fake Discord through the real
 * discord.js Client: a channel's pool of webhooks, listed once, made as replies overlap and
 * reused, a webhook made again after deletion, the fallback without Manage Webhooks, streaming
 * edits, threads, and the overrides as stored.
 */
import { ChannelType, Events, HTTPError, type Message, type TextChannel } from 'discord.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AvatarUrls } from '../../src/avatar-urls.js';
import { globalWindows, withGlobalWindows } from '../../src/bot/pacing/global-window.js';
import { PersonaReplies, personaReplyChannel } from '../../src/bot/personas/persona-replies.js';
import { MessageUneditableError } from '../../src/bot/replies/streaming-reply.js';
import type { CharacterRecord } from '../../src/core/records.js';
import type { Core } from '../../src/core/core.js';
import { sanitizePersonaName, type WebhookLease, WebhookPersonas } from '../../src/bot/personas/webhook-personas.js';
import { startWithClient } from './harness.js';
import { PATIENCE_MS } from '../support/patience.js';

const silentLogger = pino({ level: 'silent' });
/** Waits until the channel's pool holds `size` webhooks; it grows in the background. */
async function poolReaches(personas: WebhookPersonas, channelId: string, size: number): Promise<void> {
  for (const deadline = Date.now() + PATIENCE_MS; (await personas.poolSize(channelId)) !== size; ) {
    if (Date.now() > deadline) throw new Error(`the pool of ${channelId} holds ${await personas.poolSize(channelId)} webhooks, not ${size}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const ada = { name: 'Ada Lovelace', avatarUrl: 'https://likeness.example/avatars/ada.png' };

describe('webhook personas', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  let personas: WebhookPersonas;

  const newChannel = async (name: string, manageWebhooks = true): Promise<TextChannel> => {
    const created = setup.fake.createTextChannel(setup.fake.guild.id, name);
    setup.fake.setManageWebhooks(created.id, manageWebhooks);
    const channel = await setup.client.channels.fetch(created.id);
    if (channel?.type !== ChannelType.GuildText) throw new Error(`${name} did not reach the client`);
    return channel;
  };
  const requestsTo = (route: string, channelId: string): number =>
    setup.fake.requests.filter((request) => request.route === route && request.path === `/channels/${channelId}/webhooks`).length;

  beforeAll(async () => {
    // Twenty posts on one webhook would otherwise be paced at 5 per 2 s, and webhooks made at 5 per
    // 5 s; pacing is not under test here.
    setup = await startWithClient({
      rateLimits: { retryAfterHeader: 'fractional', buckets: { 'webhook-execute': { limit: 100, windowMs: 1000 }, 'webhook-manage': { limit: 100, windowMs: 1000 } } },
    });
    personas = new WebhookPersonas({ client: setup.client, logger: pino({ level: 'silent' }) });
  });
  afterAll(() => setup.stop());

  it('lists a channel’s webhooks once and makes one before the first post, even when 20 start together; more as they overlap, never past the pool', async () => {
    const channel = await newChannel('twenty');
    const results = await Promise.all(Array.from({ length: 20 }, (_, index) => personas.send(channel.id, ada, `line ${index}`)));
    expect(results.every((result) => result.kind === 'sent')).toBe(true);
    expect(requestsTo('GET /channels/{channel.id}/webhooks', channel.id)).toBe(1);
    // The first webhook was made before any post; the others while the posts went out.
    const firstPost = setup.fake.requests.findIndex((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}' && request.path.startsWith(`/webhooks/${setup.fake.webhooks(channel.id)[0]!.id}/`));
    const creations = () => setup.fake.requests.flatMap((request, index) => (request.route === 'POST /channels/{channel.id}/webhooks' && request.path === `/channels/${channel.id}/webhooks` ? [index] : []));
    expect(creations()[0]).toBeLessThan(firstPost);
    // Twenty replies hold their webhooks (none said it was over): the pool grows to its 5 and stops.
    await poolReaches(personas, channel.id, 5);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(creations()).toHaveLength(5);
    const webhooks = setup.fake.webhooks(channel.id);
    expect(webhooks.map((webhook) => webhook.name)).toEqual(Array(5).fill('Likeness'));
    expect(setup.fake.messages(channel.id)).toHaveLength(20);
  });

  it('gives overlapping replies webhooks of their own, keeps a reply on its webhook, and frees it when the reply ends', async () => {
    const channel = await newChannel('overlap');
    const pooled = new WebhookPersonas({ client: setup.client, logger: silentLogger, webhooksPerChannel: 3 });
    const sent = async (content: string, lease?: WebhookLease) => {
      const result = await pooled.send(channel.id, ada, content, lease);
      if (result.kind !== 'sent') throw new Error('not sent');
      return result;
    };
    const a = await sent('a');
    // A second reply while the first streams: it shares the only webhook, and a second is made meanwhile.
    const b = await sent('b');
    expect(b.lease.webhookId).toBe(a.lease.webhookId);
    await poolReaches(pooled, channel.id, 2);
    const c = await sent('c');
    expect(c.lease.webhookId).not.toBe(a.lease.webhookId);
    // A reply's later messages go through its own webhook, however busy.
    expect((await sent('c, continued', c.lease)).lease.webhookId).toBe(c.lease.webhookId);
    expect(setup.fake.message((await sent('a, continued', a.lease)).messageId)?.webhook_id).toBe(a.lease.webhookId);
    // Edits go through the webhook that sent the message.
    await pooled.edit(channel.id, c.lease, c.messageId, 'c, edited');
    expect(setup.fake.message(c.messageId)?.content).toBe('c, edited');
    // The first webhook's two replies end: the next reply takes it, not the busy second one.
    pooled.release(a.lease);
    pooled.release(b.lease);
    expect((await sent('d')).lease.webhookId).toBe(a.lease.webhookId);
    // Many more overlapping replies: never past the pool's 3.
    await Promise.all(Array.from({ length: 8 }, (_, index) => sent(`more ${index}`)));
    await poolReaches(pooled, channel.id, 3);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(setup.fake.webhooks(channel.id).filter((webhook) => !webhook.deleted)).toHaveLength(3);
    // After a restart all three are found again and used; none is made.
    const restarted = new WebhookPersonas({ client: setup.client, logger: silentLogger, webhooksPerChannel: 3 });
    const used = new Set<string>();
    for (let index = 0; index < 3; index += 1) {
      const result = await restarted.send(channel.id, ada, `after restart ${index}`);
      if (result.kind === 'sent') used.add(result.lease.webhookId);
    }
    expect(used.size).toBe(3);
    expect(setup.fake.webhooks(channel.id)).toHaveLength(3);
  });

  it('stops growing at Discord’s 15 webhooks in a channel, and the replies share the ones it has', async () => {
    const channel = await newChannel('crowded');
    for (let index = 0; index < 13; index += 1) setup.fake.createUserWebhook(channel.id, `someone’s ${index}`);
    const pooled = new WebhookPersonas({ client: setup.client, logger: silentLogger });
    const results = [];
    for (let index = 0; index < 4; index += 1) {
      results.push(await pooled.send(channel.id, ada, `crowded ${index}`));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(results.every((result) => result.kind === 'sent')).toBe(true);
    expect(await pooled.poolSize(channel.id)).toBe(2);
    const refused = setup.fake.requests.filter((request) => request.route === 'POST /channels/{channel.id}/webhooks' && request.path === `/channels/${channel.id}/webhooks` && request.status !== 200);
    // Refused once, then not asked again for a while.
    expect(refused).toHaveLength(1);
    expect(setup.fake.messages(channel.id)).toHaveLength(4);
  });

  it('reuses a webhook the bot already owns in the channel (e.g. from before a restart)', async () => {
    const channel = await newChannel('restart');
    const earlier = await channel.createWebhook({ name: 'Likeness' });
    await channel.createWebhook({ name: 'Someone else’s' });
    const fresh = new WebhookPersonas({ client: setup.client, logger: pino({ level: 'silent' }) });
    const result = await fresh.send(channel.id, ada, 'still me');
    expect(result).toMatchObject({ kind: 'sent', lease: { webhookId: earlier.id } });
    expect(requestsTo('POST /channels/{channel.id}/webhooks', channel.id)).toBe(2);
  });

  it('shows the character’s name and avatar on the stored message and its gateway event', async () => {
    const channel = await newChannel('overrides');
    const seen = new Promise<Message>((resolve) => setup.client.on(Events.MessageCreate, (message) => message.channelId === channel.id && resolve(message)));
    const result = await personas.send(channel.id, { name: 'Clyde, the Discord bard', avatarUrl: ada.avatarUrl }, 'A song!');
    if (result.kind !== 'sent') throw new Error('not sent');
    const stored = setup.fake.message(result.messageId);
    // Discord refuses "clyde" and "discord" in names; a hair space keeps the name as it is called.
    const shown = 'C\u200alyde, the D\u200aiscord bard';
    expect(stored).toMatchObject({ content: 'A song!', webhook_id: result.lease.webhookId, author: { id: result.lease.webhookId, username: shown, bot: true } });
    expect(stored?.author.avatar).toMatch(/^[0-9a-f]{32}$/);
    const execute = setup.fake.requests.findLast((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}');
    expect(execute?.body).toMatchObject({ username: shown, avatar_url: ada.avatarUrl, allowed_mentions: { parse: [] } });
    const message = await seen;
    expect(message.author.username).toBe(shown);
    expect(personas.isOwnPersonaMessage(message)).toBe(true);
    const fromUser = setup.fake.sendMessage({ author: setup.user, channelId: channel.id, content: 'hello Ada' });
    expect(personas.isOwnPersonaMessage({ webhookId: fromUser.webhook_id ?? null, applicationId: null })).toBe(false);
  });

  it('makes the webhook again after someone deletes it, and retries the post once', async () => {
    const channel = await newChannel('deleted');
    const first = await personas.send(channel.id, ada, 'before');
    if (first.kind !== 'sent') throw new Error('not sent');
    await setup.client.deleteWebhook(first.lease.webhookId);
    // The same reply's next message: its webhook is gone, so it goes through a new one.
    const second = await personas.send(channel.id, ada, 'after', first.lease);
    if (second.kind !== 'sent') throw new Error('not sent');
    expect(second.lease.webhookId).not.toBe(first.lease.webhookId);
    expect(setup.fake.messages(channel.id).map((message) => message.content)).toEqual(['before', 'after']);
    expect(setup.fake.webhooks(channel.id).map((webhook) => webhook.deleted)).toEqual([true, false]);
    const unknown = setup.fake.requests.filter((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}' && request.status === 404);
    expect(unknown.map((request) => request.path)).toEqual([`/webhooks/${first.lease.webhookId}/${setup.fake.webhooks(channel.id)[0]!.token}`]);
    // The old message belonged to the deleted webhook: it cannot be edited any more.
    // Its old message still shows but can never be edited again: the writer goes on in a new one.
    await expect(personas.edit(channel.id, first.lease, first.messageId, 'changed')).rejects.toBeInstanceOf(MessageUneditableError);
  });

  it('throws Discord’s 5xx (after discord.js’s retries) without remembering it, and gives back a webhook it took for a failed post', async () => {
    const channel = await newChannel('server-errors');
    const first = await channel.createWebhook({ name: 'Likeness' });
    await channel.createWebhook({ name: 'Likeness' });
    const fresh = new WebhookPersonas({ client: setup.client, logger: silentLogger });
    // discord.js sends each request four times on a 5xx: the lookup fails for good here.
    setup.fake.forceServerError({ route: 'GET /channels/{channel.id}/webhooks', status: 500, count: 4 });
    await expect(fresh.send(channel.id, ada, 'lost')).rejects.toBeInstanceOf(HTTPError);
    setup.fake.forceServerError({ route: 'POST /webhooks/{webhook.id}/{webhook.token}', status: 502, count: 4 });
    await expect(fresh.send(channel.id, ada, 'lost too')).rejects.toMatchObject({ status: 502 });
    // The failed post's webhook is free again: the next reply takes it, the first of two idle ones.
    expect(await fresh.send(channel.id, ada, 'arrives')).toMatchObject({ kind: 'sent', lease: { webhookId: first.id } });
    expect(setup.fake.messages(channel.id).map((message) => message.content)).toEqual(['arrives']);
  });

  it('signals the fallback without Manage Webhooks, explains once per channel, and works once granted', async () => {
    const channel = await newChannel('no-permission', false);
    const thread = await channel.threads.create({ name: 'inside' });
    expect(await personas.send(channel.id, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'missing-permission' });
    expect(await personas.send(thread.id, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'missing-permission' });
    expect(await personas.explanationOnce(channel.id, 'missing-permission')).toContain('Manage Webhooks');
    expect(await personas.explanationOnce(thread.id, 'missing-permission')).toBeNull();
    expect(setup.fake.messages(channel.id)).toHaveLength(0);
    // The failure is remembered: no refused request at every post.
    const listed = requestsTo('GET /channels/{channel.id}/webhooks', channel.id);
    expect(await personas.send(channel.id, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'missing-permission' });
    expect(requestsTo('GET /channels/{channel.id}/webhooks', channel.id)).toBe(listed);
    setup.fake.setManageWebhooks(channel.id, true);
    // Until the bot hears that permissions changed (a channel or role update; bot.ts wires it).
    expect(await personas.send(channel.id, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'missing-permission' });
    personas.permissionsChanged();
    expect(await personas.send(channel.id, ada, 'now as myself')).toMatchObject({ kind: 'sent' });
  });

  it('asks Discord again once the memory of a failure runs out', async () => {
    let now = 1_000_000;
    const forgetful = new WebhookPersonas({ client: setup.client, logger: silentLogger, fallbackMemoryMs: 60_000, now: () => now });
    const channel = await newChannel('granted-later', false);
    expect(await forgetful.send(channel.id, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'missing-permission' });
    setup.fake.setManageWebhooks(channel.id, true);
    now += 59_000;
    expect(await forgetful.send(channel.id, ada, 'hi')).toMatchObject({ kind: 'fallback' });
    now += 2_000;
    expect(await forgetful.send(channel.id, ada, 'hi')).toMatchObject({ kind: 'sent' });
  });

  it('streams by editing its message, through the streaming writer’s channel interface', async () => {
    const channel = await newChannel('streaming');
    const reply = personaReplyChannel(personas, channel, ada, silentLogger);
    const messageId = await reply.send('Once');
    await reply.edit(messageId, 'Once upon');
    await reply.edit(messageId, 'Once upon a time.');
    expect(setup.fake.messageHistory(messageId).map((version) => [version.kind, version.content])).toEqual([
      ['create', 'Once'],
      ['edit', 'Once upon'],
      ['edit', 'Once upon a time.'],
    ]);
    expect(setup.fake.message(messageId)?.author.username).toBe('Ada Lovelace');
    expect(reply.pacingKey?.()).toMatch(/^webhook:\d+\//);
    // Without the permission the bot posts, after saying once how to let characters post.
    const silent = await newChannel('streaming-no-permission', false);
    const fallback = personaReplyChannel(personas, silent, ada, silentLogger);
    const asBot = await fallback.send('x');
    await fallback.edit(asBot, 'xy');
    expect(fallback.pacingKey?.()).toBeUndefined();
    await personaReplyChannel(personas, silent, ada, silentLogger).send('z');
    expect(setup.fake.messages(silent.id).map((message) => [message.author.id, message.content.slice(0, 20)])).toEqual([
      [setup.fake.botUser.id, 'Characters can post '],
      [setup.fake.botUser.id, 'xy'],
      [setup.fake.botUser.id, 'z'],
    ]);
  });

  it('posts and edits in a thread through its parent’s webhook with thread_id', async () => {
    const channel = await newChannel('threads');
    const thread = await channel.threads.create({ name: 'a scene' });
    const result = await personas.send(thread.id, ada, 'In the scene');
    if (result.kind !== 'sent') throw new Error('not sent');
    await personas.edit(thread.id, result.lease, result.messageId, 'In the scene, edited');
    expect(setup.fake.messages(thread.id).map((message) => [message.content, message.author.username])).toEqual([['In the scene, edited', 'Ada Lovelace']]);
    expect(setup.fake.messages(channel.id)).toHaveLength(0);
    expect(setup.fake.webhooks(thread.id)).toHaveLength(0);
    expect(setup.fake.webhooks(channel.id)).toHaveLength(1);
    const paths = setup.fake.requests.filter((request) => request.route?.startsWith('PATCH /webhooks/{webhook.id}') === true).map((request) => request.query.get('thread_id'));
    expect(paths.at(-1)).toBe(thread.id);
  });

  it('gives personas a picture only when PUBLIC_BASE_URL is one Discord can reach, and says so once', async () => {
    const channel = await newChannel('pictures');
    // PersonaReplies is handed the character; it reads nothing of the core for that.
    const core = {} as unknown as Core;
    const character = { id: 'character-1', name: 'Ada Lovelace', avatar: { key: 'avatar-file', mimeType: 'image/png' } } as unknown as CharacterRecord;
    const avatarUrlSent = async (publicBaseUrl: string) => {
      const said: string[] = [];
      const logger = { debug() {}, info: (_fields: object, message: string) => said.push(message), warn() {}, error() {} };
      const replies = new PersonaReplies({ core, personas, avatars: new AvatarUrls({ publicBaseUrl, secret: 'a-signing-secret-of-some-length' }), logger });
      await replies.channelFor(channel, character).send(`from ${publicBaseUrl}`);
      const execute = setup.fake.requests.findLast((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}');
      return { avatarUrl: (execute?.body as { avatar_url?: string }).avatar_url, said };
    };
    const open = await avatarUrlSent('https://likeness.example');
    expect(open.avatarUrl).toMatch(/^https:\/\/likeness\.example\/avatars\/character-1\/[A-Za-z0-9_-]{43}\.png$/);
    expect(open.said).toEqual([]);
    const local = await avatarUrlSent('http://192.168.1.20:3000');
    expect(local.avatarUrl).toBeUndefined();
    expect(local.said).toEqual(['PUBLIC_BASE_URL is not reachable from the internet: personas post without a picture']);
    expect(setup.fake.messages(channel.id).map((message) => message.author.username)).toEqual(['Ada Lovelace', 'Ada Lovelace']);
  });

  it('tells a DM that personas do not exist there', async () => {
    const dm = setup.fake.openDm(setup.user);
    expect(await personas.send(dm, ada, 'hi')).toEqual({ kind: 'fallback', reason: 'unsupported-channel' });
  });
});

describe('webhook personas when the address’s global window is full', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  // Four requests per 1.1 s in each window, one place of the token's kept for the bot; the fake
  // refuses a sixth in any of its seconds, per token and per address.
  const windows = globalWindows(4, { windowMs: 1100, spillReserve: 1, token: () => setup?.fake.token });

  beforeAll(async () => {
    setup = await startWithClient(
      // Each webhook's own bucket is not under test here.
      { rateLimits: { retryAfterHeader: 'fractional', global: { limit: 5, windowMs: 1000 }, buckets: { 'webhook-execute': { limit: 100, windowMs: 1000 } } } },
      { rest: { makeRequest: withGlobalWindows(windows), globalRequestsPerSecond: 100 } },
    );
  });
  afterAll(() => setup.stop());

  it('sends webhook posts with the bot token while the token’s window has room: all arrive as the persona, none refused', async () => {
    // One webhook a channel: no pool growth takes places of the token's window meanwhile.
    const personas = new WebhookPersonas({ client: setup.client, logger: silentLogger, webhooksPerChannel: 1 });
    const channelIds = ['a', 'b'].map((name) => {
      const created = setup.fake.createTextChannel(setup.fake.guild.id, `spill-${name}`);
      setup.fake.setManageWebhooks(created.id, true);
      return created.id;
    });
    // Each channel's webhook found and made (token requests), then both windows left to empty.
    for (const channelId of channelIds) expect((await personas.send(channelId, ada, 'first')).kind).toBe('sent');
    await new Promise((resolve) => setTimeout(resolve, 1200));
    const before = setup.fake.requests.length;
    const results = await Promise.all(channelIds.flatMap((channelId) => [1, 2, 3, 4].map((line) => personas.send(channelId, ada, `line ${line}`))));
    expect(results.every((result) => result.kind === 'sent')).toBe(true);
    const posts = setup.fake.requests.slice(before).filter((request) => request.route === 'POST /webhooks/{webhook.id}/{webhook.token}');
    expect(posts.map((request) => request.status)).toEqual(Array(8).fill(200));
    // Four went on the address's window, then some with the token, which the fake counted there.
    expect(posts.filter((request) => request.authenticated).length).toBeGreaterThanOrEqual(1);
    expect(posts.filter((request) => !request.authenticated).length).toBeGreaterThanOrEqual(4);
    expect(setup.fake.rateLimitHits.total).toBe(0);
    for (const channelId of channelIds) {
      expect(setup.fake.messages(channelId).map((message) => [message.author.username, message.webhook_id !== undefined])).toEqual(Array(5).fill(['Ada Lovelace', true]));
    }
  });
});

describe('sanitizePersonaName', () => {
  it('keeps names Discord accepts and repairs the rest', () => {
    const hair = '\u200a';
    expect(sanitizePersonaName('Ada Lovelace')).toBe('Ada Lovelace');
    // The words Discord refuses keep their letters, split by a hair space, so the name reads as it is called.
    expect(sanitizePersonaName('DiScOrD Queen')).toBe(`D${hair}iScOrD Queen`);
    expect(sanitizePersonaName('discdiscordord clyde')).toBe(`discd${hair}iscordord c${hair}lyde`);
    expect(sanitizePersonaName('  Mr.\n  Clydesdale ')).toBe(`Mr. C${hair}lydesdale`);
    for (const name of ['DiScOrD Queen', 'discdiscordord clyde', 'Clydesdale']) expect(sanitizePersonaName(name)).not.toMatch(/discord|clyde/i);
    expect(sanitizePersonaName('x'.repeat(100))).toHaveLength(80);
    expect(sanitizePersonaName('🙂'.repeat(50)).length).toBeLessThanOrEqual(80);
    expect(sanitizePersonaName('', 'Narrator')).toBe('Narrator');
  });
});
