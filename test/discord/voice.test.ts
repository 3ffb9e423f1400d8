import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMp3 } from '../../src/audio/mp3.js';
import { durationMs } from '../../src/audio/pcm.js';
import { createEspeakSpeechEngine } from '../../src/engines/speech/espeak.js';
import { type FakeOpenAISpeech, startFakeOpenAISpeech } from '../fakes/speech/fake-openai-speech.js';
import { type BotHarness, startBotHarness } from './harness.js';

const voiceId = 'en-us+f3';

/** How long espeak says `text` in the test voice: what a listener should hear. */
async function spokenMs(text: string): Promise<number> {
  const engine = createEspeakSpeechEngine();
  try {
    let total = 0;
    for await (const piece of engine.stream({ text, voiceId })) total += durationMs(piece);
    return total;
  } finally {
    await engine.close();
  }
}

describe('/speak in voice channels, heard through the fake voice server', () => {
  let bot: BotHarness;
  let singer: APIUser;
  let guildId: string;
  let voiceChannelId: string;

  async function speak(user: APIUser, text: string, channelId = bot.discord.guild.textChannelId) {
    const sent = bot.discord.sendSlashCommand({ user, channelId, name: 'speak', options: { text } });
    await sent.response;
    return sent.interactionId;
  }

  beforeAll(async () => {
    bot = await startBotHarness({ voice: true });
    guildId = bot.discord.guild.id;
    voiceChannelId = bot.discord.guild.voiceChannelId!;
    singer = bot.discord.createUser({ username: 'singer' });
    const trained = bot.discord.sendSlashCommand({ user: singer, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'voice', options: { preset: voiceId } });
    await trained.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(trained.interactionId)).includes('now speaks'), 10_000);
  });
  afterAll(async () => {
    await bot.close();
  });

  it('tells a user whose character has no voice how to give it one', async () => {
    const mute = bot.discord.createUser({ username: 'mute' });
    const id = await speak(mute, 'Hello');
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(id)).includes('has no voice yet'));
  });

  it('joins the caller’s voice channel and plays the speech: its length, not silence, then silence frames', async () => {
    const text = 'The lighthouse keeper counted every ship that passed.';
    const expected = await spokenMs(text);
    bot.voice!.joinVoice(singer, voiceChannelId);
    const since = performance.now();
    await speak(singer, text);
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.silenceFrames >= 4 && audio.durationMs > 0, { since, timeoutMs: 20_000 });
    expect(Math.abs(heard.durationMs - expected) / expected).toBeLessThan(0.05);
    expect(heard.rms).toBeGreaterThan(0.02);
    expect(heard.segments).toHaveLength(1);
  });

  it('plays two requests in order', async () => {
    const first = 'First, the bell.';
    const second = 'Then, a much longer sentence about the tide coming in over the rocks.';
    const [firstMs, secondMs] = [await spokenMs(first), await spokenMs(second)];
    const since = performance.now();
    await speak(singer, first);
    await speak(singer, second);
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.segments.length >= 2 && audio.silenceFrames >= 8, { since, timeoutMs: 30_000 });
    expect(Math.abs(heard.segments[0]!.durationMs - firstMs) / firstMs).toBeLessThan(0.05);
    expect(Math.abs(heard.segments[1]!.durationMs - secondMs) / secondMs).toBeLessThan(0.05);
  });

  it('keeps playing through a voice connection that drops and resumes mid-speech', async () => {
    bot.voice!.joinVoice(singer, voiceChannelId);
    const text = 'A long sentence that keeps going while the connection to the voice server is cut and comes back again.';
    const expected = await spokenMs(text);
    const since = performance.now();
    await speak(singer, text);
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 1000, { since, timeoutMs: 15_000 });
    expect(bot.voice!.dropVoiceConnection(guildId, { code: 4015 })).toBeGreaterThan(0);
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= expected * 0.95 && audio.silenceFrames >= 4, { since, timeoutMs: 20_000 });
    expect(Math.abs(heard.durationMs - expected) / expected).toBeLessThan(0.05);
  });

  it('survives a dropped voice connection and plays again on the next /speak', async () => {
    bot.voice!.joinVoice(singer, voiceChannelId);
    const warmUp = performance.now();
    await speak(singer, 'Testing.');
    await bot.voice!.waitForAudio(guildId, (audio) => audio.silenceFrames >= 4 && audio.durationMs > 0, { since: warmUp, timeoutMs: 15_000 });
    bot.voice!.kickBot(guildId);
    await bot.voice!.waitFor((voice) => voice.connections.at(-1)?.closeCodes.includes(4014), 5_000);
    const text = 'Back again, after the storm.';
    const expected = await spokenMs(text);
    const since = performance.now();
    await speak(singer, text);
    // The bot waits 5 s for a dropped connection to recover (it may be a move), then joins afresh.
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.silenceFrames >= 4 && audio.durationMs > 0, { since, timeoutMs: 15_000 });
    expect(bot.voice!.connections.length).toBeGreaterThanOrEqual(2);
    expect(Math.abs(heard.durationMs - expected) / expected).toBeLessThan(0.05);
  });

  it('speaks the replies of a followed thread sentence by sentence, starting before the reply is written', async () => {
    bot.voice!.joinVoice(singer, voiceChannelId);
    const sentences = ['The harbour was quiet that night.', 'Only the gulls were awake.', 'Then the bell began to ring.'];
    bot.llm.setScript({ tokens: sentences.join(' ').match(/\S+\s*/g)!, tokensPerSecond: 6 });
    const opened = bot.discord.sendSlashCommand({ user: singer, channelId: bot.discord.guild.textChannelId, name: 'chat', options: { character: 'singer' } });
    await opened.response;
    const thread = await bot.discord.waitFor(() => bot.discord.threads.find((candidate) => candidate.name?.startsWith('singer')));
    // The conversation is linked to the thread once /chat has answered.
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`));
    const follow = bot.discord.sendSlashCommand({ user: singer, channelId: thread.id, name: 'voice', subcommand: 'follow' });
    await follow.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(follow.interactionId)).includes('will also be spoken'));
    const since = performance.now();
    bot.discord.sendMessage({ channelId: thread.id, author: singer, content: 'Tell me about the harbour' });
    const full = sentences.join(' ');
    await bot.discord.waitFor(() => bot.botTexts(thread.id).includes(full), 20_000);
    const reply = bot.discord.messages(thread.id).find((message) => message.content === full)!;
    const finishedAt = bot.discord.messageHistory(reply.id).at(-1)!.timestamp;
    let expected = 0;
    for (const sentence of sentences) expected += await spokenMs(sentence);
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= expected * 0.9 && audio.silenceFrames >= 4, { since, timeoutMs: 30_000 });
    expect(performance.timeOrigin + heard.firstPacketAt!).toBeLessThan(finishedAt);
    expect(Math.abs(heard.durationMs - expected) / expected).toBeLessThan(0.1);
  });

  it('sends an mp3 to a user who is not in a voice channel', async () => {
    bot.voice!.leaveVoice(singer, guildId);
    const text = 'A message in a bottle.';
    const id = await speak(singer, text);
    const attachment = await bot.discord.waitFor(() => {
      const record = bot.discord.interactionResponses(id).find((entry) => entry.messageId && bot.discord.message(entry.messageId)?.attachments.length);
      return record && bot.discord.message(record.messageId!)!.attachments[0];
    }, 15_000);
    expect(attachment.filename).toMatch(/\.mp3$/);
    const pcm = await decodeMp3(new Uint8Array(await (await fetch(attachment.url)).arrayBuffer()));
    const expected = await spokenMs(text);
    expect(Math.abs(durationMs(pcm) - expected) / expected).toBeLessThan(0.1);
  });
});

describe('leaving and stopping voice', () => {
  let bot: BotHarness;
  let guildId: string;
  let voiceChannelId: string;
  const long = 'The keeper told the story of the great storm, of the ships that came home and of those that did not, late into the night.';

  async function command(user: APIUser, name: string, options: Record<string, string> = {}, subcommand?: string): Promise<string> {
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name, options, ...(subcommand ? { subcommand } : {}) });
    await sent.response;
    await bot.discord.waitFor(() => bot.discord.interactionResponses(sent.interactionId).some((record) => record.kind === 'original-edit' || record.callbackType === 4), 10_000);
    return JSON.stringify(bot.discord.interactionResponses(sent.interactionId));
  }

  async function speaker(username: string): Promise<APIUser> {
    const user = bot.discord.createUser({ username });
    expect(await command(user, 'character', { preset: voiceId }, 'voice')).toContain('now speaks');
    bot.voice!.joinVoice(user, voiceChannelId);
    return user;
  }

  const left = () => bot.voice!.voiceStateRequests.at(-1)?.channelId === null;

  beforeAll(async () => {
    bot = await startBotHarness({ voice: true, environment: { DISCORD_VOICE_IDLE_SECONDS: '2' } });
    guildId = bot.discord.guild.id;
    voiceChannelId = bot.discord.guild.voiceChannelId!;
  });
  afterAll(async () => {
    await bot.close();
  });

  it('/voice stop cuts the speech short; /voice leave leaves the channel', async () => {
    const user = await speaker('stopper');
    const expected = await spokenMs(long);
    const since = performance.now();
    await command(user, 'speak', { text: long });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 1000, { since, timeoutMs: 15_000 });
    expect(await command(user, 'voice', {}, 'stop')).toContain('Stopped');
    // A forced stop sends no silence frames: the audio simply stops growing.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const atStop = bot.voice!.heard(guildId, { since }).durationMs;
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(bot.voice!.heard(guildId, { since }).durationMs).toBe(atStop);
    expect(atStop).toBeLessThan(expected * 0.8);
    expect(await command(user, 'voice', {}, 'stop')).toContain('Nothing is playing');
    const again = performance.now();
    await command(user, 'speak', { text: long });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 500, { since: again, timeoutMs: 15_000 });
    expect(await command(user, 'voice', {}, 'leave')).toContain('Left the voice channel');
    await bot.voice!.waitFor(left, 5_000);
    expect(await command(user, 'voice', {}, 'leave')).toContain('not in a voice channel');
  });

  it('leaves when everyone else has left', async () => {
    const user = await speaker('lonely');
    const since = performance.now();
    await command(user, 'speak', { text: 'Is anyone there?' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 0 && audio.silenceFrames >= 4, { since, timeoutMs: 15_000 });
    expect(left()).toBe(false);
    bot.voice!.leaveVoice(user, guildId);
    await bot.voice!.waitFor(left, 5_000);
  });

  it('leaves after being idle', async () => {
    const user = await speaker('idler');
    const since = performance.now();
    await command(user, 'speak', { text: 'Just one thing.' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 0 && audio.silenceFrames >= 4, { since, timeoutMs: 15_000 });
    expect(left()).toBe(false);
    // DISCORD_VOICE_IDLE_SECONDS is 2 here.
    await bot.voice!.waitFor(left, 6_000);
  });
});


describe('speech that stops coming', () => {
  let bot: BotHarness;
  let speechServer: FakeOpenAISpeech;

  beforeAll(async () => {
    speechServer = await startFakeOpenAISpeech();
    bot = await startBotHarness({ voice: true, environment: { TTS_ENGINE: 'openai', TTS_BASE_URL: speechServer.apiURL } });
  });
  afterAll(async () => {
    await bot.close();
    await speechServer.close();
  });

  it('speaks each character of a followed scene in its own voice', { timeout: 45_000 }, async () => {
    const command = async (user: APIUser, channelId: string, name: string, subcommand: string, options: Record<string, string | boolean>) => {
      const sent = bot.discord.sendSlashCommand({ user, channelId, name, subcommand, options });
      await sent.response;
      await bot.discord.waitFor(() => /"content":"[^"]/.test(JSON.stringify(bot.discord.interactionResponses(sent.interactionId))), 10_000);
      return JSON.stringify(bot.discord.interactionResponses(sent.interactionId));
    };
    const textChannel = bot.discord.guild.textChannelId;
    const ada = bot.discord.createUser({ username: 'ada-owner' });
    const bo = bot.discord.createUser({ username: 'bo-owner' });
    for (const [user, name, voice] of [[ada, 'Ada', 'nova'], [bo, 'Bo', 'onyx']] as const) {
      expect(await command(user, textChannel, 'character', 'edit', { name, public: true })).toContain(name);
      expect(await command(user, textChannel, 'character', 'voice', { preset: voice })).toContain('now speaks');
    }
    // Each character says who it is, so every sentence sent for speech names its speaker.
    bot.llm.setScript((body) => {
      const name = /^You are ([^.]+)\./.exec(String(body.messages?.[0]?.content ?? ''))?.[1] ?? 'nobody';
      return { reply: `${name} is speaking now.`, tokensPerSecond: 40 };
    });
    const opened = bot.discord.sendSlashCommand({ user: ada, channelId: textChannel, name: 'chat', options: { character: 'Ada' } });
    await opened.response;
    const thread = await bot.discord.waitFor(() => bot.discord.threads.find((candidate) => candidate.name?.startsWith('Ada')));
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`));
    expect(await command(ada, thread.id, 'scene', 'add', { character: 'Bo' })).toContain('**Bo** joins');
    bot.voice!.joinVoice(ada, bot.discord.guild.voiceChannelId!);
    expect(await command(ada, thread.id, 'voice', 'follow', {})).toContain('will also be spoken');

    const spoken = () =>
      speechServer.requests
        .filter((request) => request.path === '/v1/audio/speech')
        .map((request) => request.json as { input: string; voice: string })
        .filter((body) => body.input.includes('is speaking now'))
        .map((body) => [body.input, body.voice]);
    const since = performance.now();
    bot.discord.sendMessage({ channelId: thread.id, author: ada, content: 'Hello there' });
    await bot.discord.waitFor(() => spoken().length === 1, 15_000);
    bot.discord.sendMessage({ channelId: thread.id, author: ada, content: 'Bo, your turn' });
    await bot.discord.waitFor(() => spoken().length === 2, 15_000);
    expect(spoken()).toEqual([
      ['Ada is speaking now.', 'nova'],
      ['Bo is speaking now.', 'onyx'],
    ]);
    // And both were heard in the voice channel.
    await bot.voice!.waitForAudio(bot.discord.guild.id, (audio) => audio.durationMs > 1_000 && audio.silenceFrames >= 4, { since, timeoutMs: 20_000 });
    // A reply asked for with /scene next is spoken too, in its writer's voice.
    const next = bot.discord.sendSlashCommand({ user: ada, channelId: thread.id, name: 'scene', subcommand: 'next', options: { character: 'Ada' } });
    await next.response;
    await bot.discord.waitFor(() => spoken().length === 3, 15_000);
    expect(spoken()[2]).toEqual(['Ada is speaking now.', 'nova']);
  });

  it('ends a /speak whose engine stalls with a message, and plays the next one', { timeout: 45_000 }, async () => {
    const user = bot.discord.createUser({ username: 'stalled' });
    const voiced = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'voice', options: { preset: 'alloy' } });
    await voiced.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(voiced.interactionId)).includes('now speaks'), 10_000);
    bot.voice!.joinVoice(user, bot.discord.guild.voiceChannelId!);
    // One second of audio, then nothing.
    speechServer.script = { failure: { kind: 'stall', afterBytes: 48_000 } };
    const stalled = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'speak', options: { text: 'This sentence will never be finished by the engine.' } });
    await stalled.response;
    const told = await bot.discord.waitFor(() => {
      const text = JSON.stringify(bot.discord.interactionResponses(stalled.interactionId));
      return text.includes('⚠️') && text;
    }, 20_000);
    expect(told).toContain('stopped coming');
    speechServer.script = {};
    const since = performance.now();
    const next = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'speak', options: { text: 'And this one plays.' } });
    await next.response;
    await bot.voice!.waitForAudio(bot.discord.guild.id, (audio) => audio.durationMs > 300 && audio.silenceFrames >= 4, { since, timeoutMs: 15_000 });
  });
});
