/**
 * Where a call (/voice talk) lives and what else may use the guild's voice meanwhile: against
 * the fake Discord and its voice server, the fake transcription server and the fake chat engine.
 */
import type { APIUser } from 'discord-api-types/v10';
import { describe, expect, it } from 'vitest';
import { startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { latestAnswer, runCommand, startBotHarness } from './harness.js';

describe('a followed thread reply still being written when /voice talk starts', () => {
  it('is not spoken over the call: the bot stays undeafened, the call answers, and the bot stops cleanly', async () => {
    const stt = await startFakeTranscription();
    stt.script = { text: 'Are you listening to me now?' };
    const bot = await startBotHarness({ voice: true, environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en' } });
    let closed = false;
    try {
      const { id: guildId, voiceChannelId } = bot.discord.guild;
      const singer = bot.discord.createUser({ username: 'singer' });
      expect((await runCommand(bot, singer, 'character', { preset: 'en-us+f3' }, 'voice')).text).toContain('now speaks');
      bot.voice!.joinVoice(singer, voiceChannelId!);
      await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId!).includes(singer.id));
      const sentences = ['The harbour was quiet that night.', 'Only the gulls were awake.', 'Then the bell began to ring.', 'And the keeper woke up at last.'];
      bot.llm.setScript({ tokens: sentences.join(' ').match(/\S+\s*/g)!, tokensPerSecond: 4 });
      const opened = bot.discord.sendSlashCommand({ user: singer, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: 'singer' } });
      await opened.response;
      const thread = await bot.discord.waitFor(() => bot.discord.threads.find((candidate) => candidate.name?.startsWith('singer')));
      await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`));
      expect((await runCommand(bot, singer, 'voice', {}, 'follow', thread.id)).text).toContain('will also be spoken');
      const since = performance.now();
      bot.discord.sendMessage({ channelId: thread.id, author: singer, content: 'Tell me about the harbour' });
      // The first sentence is heard through /voice follow; the rest is still being written.
      await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 300, { since, timeoutMs: 20_000 });
      bot.llm.setScript(() => ({ reply: 'Aye, I hear you.', tokensPerSecond: 400 }));
      const talkAt = performance.now();
      expect((await runCommand(bot, singer, 'voice', {}, 'talk')).text).toContain('is listening');
      const joined = bot.voice!.voiceStateRequests.find((request) => request.at >= talkAt && request.channelId === voiceChannelId && request.selfDeaf === false);
      expect(joined).toBeDefined();
      // The followed reply is written to the end meanwhile; its later sentences are not spoken.
      await bot.discord.waitFor(() => bot.discord.messages(thread.id).some((message) => message.content.includes('keeper woke up at last')), 20_000);

      // The call still hears and answers.
      const asked = performance.now();
      await bot.voice!.speak(singer, { text: 'Are you listening to me now?' }, { pace: 'burst' });
      await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 500 && audio.packets.at(-1)?.silence === true, { since: asked, timeoutMs: 20_000 });
      expect(stt.transcriptions.length).toBeGreaterThan(0);
      // Nothing asked Discord to deafen the bot (op 4 with self_deaf) after the call joined.
      expect(bot.voice!.voiceStateRequests.filter((request) => request.at >= joined!.at && request.selfDeaf === true)).toEqual([]);
      closed = true;
      await bot.close();
    } finally {
      if (!closed) await bot.close().catch(() => undefined);
      await stt.close();
    }
  });
});

describe('the chat of a voice channel where a call is held', () => {
  it('answers nothing written there, during or after the call, and its writers do not join the call; each call is a conversation of its own', async () => {
    const stt = await startFakeTranscription();
    stt.script = { text: 'Hello there, remember the blue door.' };
    const bot = await startBotHarness({ voice: true, environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en' }, script: () => ({ reply: 'Aye, I hear you well.', tokensPerSecond: 400 }) });
    try {
      const { id: guildId, voiceChannelId } = bot.discord.guild;
      const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));
      const alice = bot.discord.createUser({ username: 'alice' });
      const bob = bot.discord.createUser({ username: 'bob' });
      expect((await runCommand(bot, alice, 'character', { preset: 'en-us+m3' }, 'voice')).text).toContain('now speaks');
      bot.voice!.joinVoice(alice, voiceChannelId!);
      await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId!).includes(alice.id));
      const started = await runCommand(bot, alice, 'voice', {}, 'talk');
      expect(started.text).toContain('is listening');
      expect(started.text).toContain('does not read what is written');
      const noticed = bot.botTexts(voiceChannelId!).length;

      // During the call: Bob, who is not in it, writes in the voice channel's chat.
      bot.discord.sendMessage({ channelId: voiceChannelId!, author: bob, content: 'anyone got the link to the stream?' });
      // Alice's next spoken turn is answered; by then Bob's message was long taken (or not).
      let since = performance.now();
      await bot.voice!.speak(alice, { text: 'Hello there, remember the blue door.' }, { pace: 'burst' });
      await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 300 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 20_000 });
      expect(chatRequests()).toHaveLength(1);
      expect(JSON.stringify(chatRequests()[0]!.body.messages)).not.toContain('stream?');

      expect((await runCommand(bot, alice, 'voice', {}, 'leave')).text).not.toContain('⚠️');
      await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.at(-1)?.channelId === null);
      // After the call: Bob writes again; then a thread's message is answered, which the fake
      // chat engine sees after anything Bob's message would have asked.
      bot.discord.sendMessage({ channelId: voiceChannelId!, author: bob, content: 'is the stream still on?' });
      const opened = bot.discord.sendSlashCommand({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: 'alice' } });
      await opened.response;
      const thread = await bot.discord.waitFor(() => bot.discord.threads.find((candidate) => candidate.name?.startsWith('alice')), 15_000);
      await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`), 15_000);
      const asked = chatRequests().length;
      bot.discord.sendMessage({ channelId: thread.id, author: alice, content: 'A thread message' });
      await bot.discord.waitFor(() => chatRequests().length > asked && bot.discord.messages(thread.id).some((message) => message.content.includes('Aye, I hear')), 15_000);
      expect(JSON.stringify(chatRequests().map((request) => request.body.messages))).not.toContain('stream');
      expect(bot.botTexts(voiceChannelId!).slice(noticed)).toEqual([]);
      // Bob never became a speaker of the call's conversation.
      expect((await runCommand(bot, bob, 'conversations')).text).toContain('no conversations yet');
      // Alice's list names the call's conversation for what it is, not as a DM.
      expect((await runCommand(bot, alice, 'conversations')).text).toContain('in a voice call');

      // A later call starts afresh: its people do not read what was said in the earlier one.
      stt.script = { text: 'What did I say before?' };
      expect((await runCommand(bot, alice, 'voice', {}, 'talk')).text).toContain('is listening');
      const before = chatRequests().length;
      since = performance.now();
      await bot.voice!.speak(alice, { text: 'What did I say before?' }, { pace: 'burst' });
      await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 300 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 20_000 });
      const later = chatRequests().slice(before);
      expect(later).toHaveLength(1);
      expect(JSON.stringify(later[0]!.body.messages)).toContain('What did I say before?');
      expect(JSON.stringify(later[0]!.body.messages)).not.toContain('blue door');
    } finally {
      await bot.close();
      await stt.close();
    }
  });
});

describe('/voice talk channel:', () => {
  it('starts a call in the voice channel named: by someone in it, or a manager from elsewhere; that channel\'s listening rules hold; an end nobody asked for is said in its chat', async () => {
    const stt = await startFakeTranscription();
    const bot = await startBotHarness({ voice: true, discord: { guilds: [{ voiceChannels: ['General', 'Quiet'] }] }, environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL } });
    try {
      const guildId = bot.discord.guild.id;
      const general = bot.discord.guild.channelIds['General']!;
      const quiet = bot.discord.guild.channelIds['Quiet']!;
      const alice = bot.discord.createUser({ username: 'alice' });
      // The guild's owner holds every permission, Manage Server included.
      const owner = { id: bot.discord.guild.ownerId } as APIUser;
      for (const user of [alice, owner]) expect((await runCommand(bot, user, 'character', { preset: 'en-us+m3' }, 'voice')).text).toContain('now speaks');
      bot.voice!.joinVoice(alice, general);
      await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, general).includes(alice.id));

      // Alice may not start a call in a channel she is not in.
      expect((await runCommand(bot, alice, 'voice', { channel: quiet }, 'talk')).text).toContain(`Join <#${quiet}>`);
      // The listening rules of the channel named are the ones that hold.
      const forbid = bot.discord.sendSlashCommand({ user: owner, channelId: bot.discord.guild.textChannelId, name: 'voice', subcommandGroup: 'listening', subcommand: 'off', options: { channel: quiet } });
      await forbid.response;
      await bot.discord.waitFor(() => latestAnswer(bot, forbid.interactionId).includes('no longer listen'));
      expect((await runCommand(bot, owner, 'voice', { channel: quiet }, 'talk')).text).toContain(`may not listen in <#${quiet}>`);

      // Named from the voice channel's own chat, by someone in it: the notice is posted there once.
      const since = performance.now();
      const started = await runCommand(bot, alice, 'voice', { channel: general }, 'talk', general);
      expect(started.text).toContain(`is listening in <#${general}>`);
      expect(bot.voice!.voiceStateRequests.find((request) => request.at >= since && request.channelId === general)?.selfDeaf).toBe(false);
      expect(bot.botTexts(general).filter((text) => text.includes('is listening'))).toHaveLength(1);
      await runCommand(bot, alice, 'voice', {}, 'leave');

      // A manager who is in no voice channel starts one where Alice is.
      const managed = performance.now();
      expect((await runCommand(bot, owner, 'voice', { channel: general }, 'talk')).text).toContain(`is listening in <#${general}>`);
      await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.find((request) => request.at >= managed && request.channelId === general));

      // A call that ends by itself says so in the voice channel's chat; one ended with /voice leave did not.
      bot.voice!.leaveVoice(alice, guildId);
      await bot.discord.waitFor(() => bot.botTexts(general).some((text) => text.includes('left the call: nobody was left')));
      expect(bot.botTexts(general).filter((text) => text.startsWith('📴'))).toHaveLength(1);
    } finally {
      await bot.close();
      await stt.close();
    }
  });
});
