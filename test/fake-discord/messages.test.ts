/**
 * Messages, edits, threads, DMs and files through the real discord.js Client, with Discord's
 * validation errors surfacing as DiscordAPIError.
 */
import { ChannelType, DiscordAPIError, Events, PermissionFlagsBits, type Message, type TextChannel } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWithClient } from './harness.js';

describe('fake Discord messages', () => {
  let setup: Awaited<ReturnType<typeof startWithClient>>;
  let general: TextChannel;

  beforeAll(async () => {
    // Many sends to one channel: lift Discord's 5 per 5 s so discord.js does not pace this suite.
    setup = await startWithClient({ rateLimits: { buckets: { 'message-create': { limit: 100, windowMs: 5000 } } } });
    const channel = setup.client.channels.cache.get(setup.fake.guild.textChannelId);
    if (channel?.type !== ChannelType.GuildText) throw new Error('general is missing');
    general = channel;
  });
  afterAll(() => setup.stop());

  it('records a sent message and each edit in its history', async () => {
    const { fake } = setup;
    const message = await general.send('draft');
    await message.edit('draft, longer');
    const edited = await message.edit('final');
    expect(edited.editedTimestamp).not.toBeNull();
    expect(fake.messageHistory(message.id).map((version) => [version.kind, version.content])).toEqual([
      ['create', 'draft'],
      ['edit', 'draft, longer'],
      ['edit', 'final'],
    ]);
    expect(fake.message(message.id)).toMatchObject({ content: 'final', channel_id: general.id, guild_id: fake.guild.id, author: { id: fake.botUser.id, bot: true } });
    expect(fake.requests.filter((request) => request.route === 'PATCH /channels/{channel.id}/messages/{message.id}')).toHaveLength(2);
  });

  it('dispatches the bot’s own MESSAGE_CREATE and MESSAGE_UPDATE', async () => {
    const { client } = setup;
    const created = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    const message = await general.send('echo');
    expect((await created).id).toBe(message.id);
    const updated = new Promise<Message>((resolve) => client.once(Events.MessageUpdate, (_old, next) => resolve(next as Message)));
    await message.edit('echo 2');
    expect((await updated).content).toBe('echo 2');
  });

  it('starts a thread from a message and talks in it', async () => {
    const { fake } = setup;
    const starter = await general.send('topic');
    const thread = await starter.startThread({ name: 'conversation' });
    expect(thread.id).toBe(starter.id);
    expect(thread.parentId).toBe(general.id);
    expect(thread.type).toBe(ChannelType.PublicThread);
    const reply = await thread.send('inside');
    expect(fake.messages(thread.id).map((message) => message.content)).toEqual(['inside']);
    expect(fake.threads.find((candidate) => candidate.id === thread.id)).toMatchObject({ parent_id: general.id, guild_id: fake.guild.id, owner_id: fake.botUser.id, message_count: 1 });
    await expect(starter.startThread({ name: 'again' })).rejects.toMatchObject({ code: 160004 });
    expect(reply.channelId).toBe(thread.id);
  });

  it('creates a private thread and receives users’ messages in it', async () => {
    const { client, fake, user } = setup;
    const thread = await general.threads.create({ name: 'private chat', type: ChannelType.PrivateThread });
    expect(thread.type).toBe(ChannelType.PrivateThread);
    await thread.members.add(user.id);
    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    fake.sendMessage({ channelId: thread.id, author: user, content: 'hi bot' });
    const message = await received;
    expect([message.channelId, message.content, message.member?.id]).toEqual([thread.id, 'hi bot', user.id]);
  });

  it('sends DMs through user.send and receives DMs as a partial channel', async () => {
    const { client, fake, user } = setup;
    const discordUser = await client.users.fetch(user.id);
    const sent = await discordUser.send('private hello');
    const dmId = fake.openDm(user);
    expect(sent.channelId).toBe(dmId);
    expect(fake.messages(dmId).map((message) => message.content)).toEqual(['private hello']);
    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    fake.sendMessage({ channelId: dmId, author: user, content: 'private answer' });
    const answer = await received;
    expect([answer.channel.type, answer.guildId, answer.content]).toEqual([ChannelType.DM, null, 'private answer']);
  });

  it('uploads files, serves them back, and hands users’ attachments to the client', async () => {
    const { client, fake, user } = setup;
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000030000000200', 'hex');
    const sent = await general.send({ content: 'files', files: [{ attachment: png, name: 'tiny.png' }, { attachment: Buffer.from('hello'), name: 'note.txt' }] });
    const [image, note] = [...sent.attachments.values()];
    expect([image?.name, image?.size, image?.contentType, image?.width, image?.height]).toEqual(['tiny.png', png.length, 'image/png', 3, 2]);
    expect(note?.contentType).toBe('text/plain; charset=utf-8');
    const served = await fetch(image!.url);
    expect(served.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await served.arrayBuffer())).toEqual(png);
    expect(await (await fetch(note!.proxyURL)).text()).toBe('hello');
    expect(fake.requests.at(-1)?.files.map((file) => file.filename)).toEqual(['tiny.png', 'note.txt']);

    const received = new Promise<Message>((resolve) => client.once(Events.MessageCreate, resolve));
    fake.sendMessage({ channelId: general.id, author: user, content: 'look', attachments: [{ filename: 'me.txt', contentType: 'text/plain', bytes: Buffer.from('selfie') }] });
    const attachment = (await received).attachments.first();
    expect(await (await fetch(attachment!.url)).text()).toBe('selfie');
  });

  it('serves user avatars from the fake CDN that discord.js builds URLs for', async () => {
    const { client, fake } = setup;
    const face = Buffer.from('89504e470d0a1a0a0000000d4948445200000010000000100806', 'hex');
    const person = fake.createUser({ username: 'faced', avatar: { bytes: face, contentType: 'image/png' } });
    const fetched = await client.users.fetch(person.id);
    const url = fetched.displayAvatarURL({ extension: 'png', size: 256 });
    expect(url.startsWith(fake.cdnBase)).toBe(true);
    expect(Buffer.from(await (await fetch(url)).arrayBuffer())).toEqual(face);
  });

  it('rejects content over 2,000 characters with 50035 Invalid Form Body', async () => {
    const error = await general.send('x'.repeat(2001)).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect((error as DiscordAPIError).code).toBe(50035);
    expect((error as DiscordAPIError).status).toBe(400);
    expect((error as DiscordAPIError).rawError).toMatchObject({ errors: { content: { _errors: [{ code: 'BASE_TYPE_MAX_LENGTH' }] } } });
    await expect(general.send('x'.repeat(2000))).resolves.toBeDefined();
  });

  it('reads channel history newest first, as messages.fetch expects', async () => {
    const { fake, user } = setup;
    const channel = fake.createTextChannel(fake.guild.id, 'history');
    for (const content of ['one', 'two', 'three']) fake.sendMessage({ channelId: channel.id, author: user, content });
    const fetched = await setup.client.channels.fetch(channel.id);
    if (fetched?.type !== ChannelType.GuildText) throw new Error('history channel missing');
    const messages = await fetched.messages.fetch({ limit: 2 });
    expect([...messages.values()].map((message) => message.content)).toEqual(['three', 'two']);
  });

  it('records typing and enforces the bot’s permissions', async () => {
    const { fake } = setup;
    await general.sendTyping();
    expect(fake.typingEvents(general.id)).toHaveLength(1);
    const channel = fake.createTextChannel(fake.guild.id, 'read-only');
    fake.setBotPermissions(channel.id, PermissionFlagsBits.ViewChannel | PermissionFlagsBits.ReadMessageHistory);
    const readOnly = await setup.client.channels.fetch(channel.id);
    if (readOnly?.type !== ChannelType.GuildText) throw new Error('read-only channel missing');
    await expect(readOnly.send('hello?')).rejects.toMatchObject({ code: 50013, status: 403 });
  });
});
