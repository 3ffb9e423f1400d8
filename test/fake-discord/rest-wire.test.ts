/**
 * The fake's wire format read raw, without discord.js smoothing anything over: authentication,
 * Discord's error bodies and codes, multipart uploads and their limits, message object shape,
 * interaction webhook details, and the gateway handshake.
 */
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { snowflakeTimestamp } from '../fakes/discord/snowflake.js';

describe('fake Discord on the wire', () => {
  let fake: FakeDiscord;
  let general: string;

  beforeAll(async () => {
    fake = await startFakeDiscord({ rateLimits: { buckets: { 'message-create': { limit: 1000, windowMs: 1000 } } } });
    general = fake.guild.textChannelId;
  });
  afterAll(() => fake.close());

  const api = (path: string): string => `${fake.apiBase}/v10${path}`;
  const auth = (): Record<string, string> => ({ authorization: `Bot ${fake.token}` });
  const postJson = (path: string, body: unknown, headers: Record<string, string> = auth()): Promise<Response> =>
    fetch(api(path), { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const postFiles = (path: string, payload: unknown, files: Array<{ name: string; bytes: Uint8Array }>): Promise<Response> => {
    const form = new FormData();
    files.forEach((file, index) => form.append(`files[${index}]`, new Blob([file.bytes]), file.name));
    form.append('payload_json', JSON.stringify(payload));
    return fetch(api(path), { method: 'POST', headers: auth(), body: form });
  };

  it('requires the bot token except on interaction routes', async () => {
    expect((await fetch(api('/users/@me'))).status).toBe(401);
    const wrong = await fetch(api('/users/@me'), { headers: { authorization: 'Bot nope' } });
    expect([wrong.status, await wrong.json()]).toEqual([401, { message: '401: Unauthorized', code: 0 }]);
    const me = (await (await fetch(api('/users/@me'), { headers: auth() })).json()) as { id: string; bot: boolean };
    expect([me.id, me.bot]).toEqual([fake.botUser.id, true]);
    const gateway = await (await fetch(api('/gateway/bot'), { headers: auth() })).json();
    expect(gateway).toEqual({ url: fake.gatewayUrl, shards: 1, session_start_limit: { total: 1000, remaining: 1000, reset_after: 0, max_concurrency: 1 } });
  });

  it('answers unknown things with Discord’s codes', async () => {
    const unknownRoute = await fetch(api('/nothing/here'), { headers: auth() });
    expect([unknownRoute.status, await unknownRoute.json()]).toEqual([404, { message: '404: Not Found', code: 0 }]);
    expect((await fetch(api(`/channels/${general}/typing`), { headers: auth() })).status).toBe(405);
    const channel = await postJson('/channels/123456789012345678/messages', { content: 'x' });
    expect([channel.status, await channel.json()]).toEqual([404, { message: 'Unknown Channel', code: 10003 }]);
    const message = await fetch(api(`/channels/${general}/messages/123456789012345678`), { headers: auth() });
    expect([message.status, await message.json()]).toEqual([404, { message: 'Unknown Message', code: 10008 }]);
    const empty = await postJson(`/channels/${general}/messages`, { content: '' });
    expect([empty.status, await empty.json()]).toEqual([400, { message: 'Cannot send an empty message', code: 50006 }]);
  });

  it('fails a route as Discord does when told: 500 with its JSON, 502 with Cloudflare’s page, for N requests or until cleared', async () => {
    const route = 'GET /channels/{channel.id}/webhooks';
    const list = () => fetch(api(`/channels/${general}/webhooks`), { headers: auth() });
    fake.forceServerError({ route, status: 500 });
    for (let attempt = 0; attempt < 3; attempt += 1) {
      const failed = await list();
      expect([failed.status, failed.headers.get('content-type'), await failed.json()]).toEqual([500, 'application/json', { message: '500: Internal Server Error', code: 0 }]);
    }
    fake.clearServerErrors(route);
    fake.forceServerError({ route, status: 502, count: 1 });
    const gateway = await list();
    expect([gateway.status, gateway.headers.get('content-type')]).toEqual([502, 'text/html']);
    expect(await gateway.text()).toContain('<title>502 Bad Gateway</title>');
    // Past its count the route answers again (403 here: the bot may not manage webhooks in #general).
    expect((await list()).status).toBe(403);
  });

  it('answers whole message objects with increasing, time-stamped snowflakes', async () => {
    const first = (await (await postJson(`/channels/${general}/messages`, { content: 'one' })).json()) as Record<string, unknown>;
    const second = (await (await postJson(`/channels/${general}/messages`, { content: 'two' })).json()) as Record<string, unknown>;
    for (const key of ['id', 'channel_id', 'author', 'content', 'embeds', 'attachments', 'components', 'timestamp', 'edited_timestamp', 'type', 'flags', 'tts', 'mention_everyone', 'mentions', 'mention_roles', 'pinned']) {
      expect(first).toHaveProperty(key);
    }
    expect(first['author']).toEqual(expect.objectContaining({ id: fake.botUser.id, username: fake.botUser.username, bot: true, discriminator: '0', avatar: null }));
    expect(BigInt(second['id'] as string) > BigInt(first['id'] as string)).toBe(true);
    expect(Math.abs(snowflakeTimestamp(first['id'] as string) - Date.parse(first['timestamp'] as string))).toBeLessThan(5);
    expect(first['timestamp']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00$/);
  });

  it('rejects edits of other users’ messages with 50005', async () => {
    const user = fake.createUser({ username: 'writer' });
    const message = fake.sendMessage({ channelId: general, author: user, content: 'mine' });
    const response = await fetch(api(`/channels/${general}/messages/${message.id}`), {
      method: 'PATCH',
      headers: { ...auth(), 'content-type': 'application/json' },
      body: JSON.stringify({ content: 'yours now' }),
    });
    expect([response.status, ((await response.json()) as { code: number }).code]).toEqual([403, 50005]);
  });

  it('pairs payload_json attachments with files[N] parts', async () => {
    const response = await postFiles(
      `/channels/${general}/messages`,
      { content: 'see file', attachments: [{ id: 0, filename: 'renamed.txt', description: 'a note' }] },
      [{ name: 'original.txt', bytes: Buffer.from('text') }],
    );
    const message = (await response.json()) as { attachments: Array<Record<string, unknown>> };
    expect(message.attachments).toEqual([
      expect.objectContaining({ filename: 'renamed.txt', description: 'a note', size: 4, content_type: 'text/plain; charset=utf-8' }),
    ]);
    expect(String(message.attachments[0]?.['url'])).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/cdn\/attachments\//);
  });

  it('rejects an 11th attachment with 50035 and a file over 10 MiB with 413', async () => {
    const eleven = Array.from({ length: 11 }, (_, index) => ({ name: `f${index}.txt`, bytes: Buffer.from('x') }));
    const tooMany = await postFiles(`/channels/${general}/messages`, { content: 'many' }, eleven);
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual({
      message: 'Invalid Form Body',
      code: 50035,
      errors: { attachments: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH', message: 'Must be 10 or fewer in length.' }] } },
    });
    const big = await postFiles(`/channels/${general}/messages`, { content: 'big' }, [{ name: 'big.bin', bytes: new Uint8Array(10 * 1024 * 1024 + 1) }]);
    expect([big.status, await big.json()]).toEqual([413, { message: 'Request entity too large', code: 40005 }]);
  });

  it('checks embed limits', async () => {
    const response = await postJson(`/channels/${general}/messages`, { embeds: [{ description: 'd'.repeat(4097) }] });
    expect(await response.json()).toMatchObject({ code: 50035, errors: { embeds: { '0': { description: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } } } } });
  });

  it('opens one DM channel per user', async () => {
    const user = fake.createUser({ username: 'pen-pal' });
    const first = (await (await postJson('/users/@me/channels', { recipient_id: user.id })).json()) as { id: string; type: number; recipients: Array<{ id: string }> };
    const again = (await (await postJson('/users/@me/channels', { recipient_id: user.id })).json()) as { id: string };
    expect([first.type, first.recipients.map((recipient) => recipient.id), again.id]).toEqual([1, [user.id], first.id]);
    expect(fake.openDm(user)).toBe(first.id);
  });

  it('serves the interaction callback with_response and the follow-up that edits a deferred reply', async () => {
    const user = fake.createUser({ username: 'caller' });
    const sent = fake.sendSlashCommand({ user, channelId: general, name: 'raw' });
    const early = await postJson(`/webhooks/${fake.applicationId}/${sent.token}?wait=true`, { content: 'too early' }, {});
    expect(((await early.json()) as { code: number }).code).toBe(10015);
    const callback = await postJson(`/interactions/${sent.interactionId}/${sent.token}/callback?with_response=true`, { type: 5 }, {});
    const body = (await callback.json()) as { interaction: Record<string, unknown>; resource: { type: number; message: { id: string; flags: number } } };
    expect(body.interaction).toMatchObject({ id: sent.interactionId, type: 2, response_message_loading: true, response_message_ephemeral: false });
    expect([body.resource.type, body.resource.message.flags]).toEqual([5, 128]);
    const followUp = (await (await postJson(`/webhooks/${fake.applicationId}/${sent.token}?wait=true`, { content: 'done' }, {})).json()) as { id: string; flags: number };
    expect([followUp.id, followUp.flags]).toEqual([body.resource.message.id, 0]);
    const original = await fetch(api(`/webhooks/${fake.applicationId}/${sent.token}/messages/%40original`));
    expect(((await original.json()) as { content: string }).content).toBe('done');
  });

  it('speaks the gateway handshake: hello, READY, GUILD_CREATE, heartbeat ack', async () => {
    const socket = new WebSocket(`${fake.gatewayUrl}?v=10&encoding=json`);
    const frames: Array<{ op: number; t?: string; s?: number; d: Record<string, unknown> }> = [];
    let notify = (): void => undefined;
    socket.on('message', (data) => {
      frames.push(JSON.parse(data.toString()) as (typeof frames)[number]);
      notify();
    });
    const arrived = (count: number): Promise<void> =>
      new Promise((resolve) => {
        notify = () => void (frames.length >= count && resolve());
        notify();
      });
    await arrived(1);
    expect(frames[0]).toMatchObject({ op: 10, d: { heartbeat_interval: 41_250 } });
    socket.send(JSON.stringify({ op: 2, d: { token: fake.token, intents: 1, properties: {} } }));
    await arrived(3);
    const [, ready, guildCreate] = frames;
    expect(ready).toMatchObject({ op: 0, t: 'READY', s: 1, d: { v: 10, user: { id: fake.botUser.id, bot: true }, guilds: [{ id: fake.guild.id, unavailable: true }], application: { id: fake.applicationId } } });
    expect(ready?.d['resume_gateway_url']).toBe(fake.gatewayUrl);
    expect(typeof ready?.d['session_id']).toBe('string');
    expect(guildCreate).toMatchObject({ t: 'GUILD_CREATE', s: 2, d: { id: fake.guild.id, voice_states: [], features: [] } });
    const guild = guildCreate!.d as { roles: Array<{ id: string }>; channels: Array<{ guild_id: string }>; members: Array<{ user: { id: string } }> };
    expect(guild.roles.map((role) => role.id)).toContain(fake.guild.id);
    expect(guild.channels.every((channel) => channel.guild_id === fake.guild.id)).toBe(true);
    expect(guild.members.map((member) => member.user.id)).toContain(fake.botUser.id);
    socket.send(JSON.stringify({ op: 1, d: 2 }));
    await arrived(4);
    expect(frames[3]).toEqual({ op: 11 });
    socket.close();
  });

  it('closes with 4004 on a wrong token', async () => {
    const socket = new WebSocket(fake.gatewayUrl);
    await once(socket, 'message');
    socket.send(JSON.stringify({ op: 2, d: { token: 'wrong', intents: 1, properties: {} } }));
    const [code] = (await once(socket, 'close')) as [number];
    expect(code).toBe(4004);
  });
});
