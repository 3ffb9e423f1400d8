/**
 * Managers' say over /voice talk (where characters may listen, each server's thresholds) and
 * /voice ignore me, against the fake Discord and its voice server: all of it held by the
 * database, so it outlives a restart of the bot.
 */
import { getVoiceConnection } from '@discordjs/voice';
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { decodeWav } from '../../src/audio/wav.js';
import { VoiceRules } from '../../src/bot/voice/voice-rules.js';
import { openSqlStore } from '../../src/store/sql/sql-store.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { medianPitch } from '../speech/signal-measures.js';
import { type BotHarness, type CommandOptions, latestAnswer, runCommand, startBotHarness } from './harness.js';

/** The newest line of a chat request, its speaker's name taken off (the call's conversation has had several people). */
function lastUserLine(body: FakeRequestBody): string {
  const last = body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
  return typeof last === 'string' ? (last.split('\n').at(-1) ?? '').replace(/^\w+: /, '') : '';
}

describe('/voice listening and /voice ignore me', () => {
  let bot: BotHarness;
  let stt: FakeTranscription;
  let alice: APIUser;
  let bob: APIUser;
  let owner: APIUser;
  let guildId: string;
  let general: string;
  let quiet: string;

  /** Runs `/voice <group> <subcommand>` in the server's text channel; answers the text of its answer. */
  async function voiceCommand(user: APIUser, group: string, subcommand: string, options: CommandOptions = {}): Promise<string> {
    const sent = bot.discord.sendSlashCommand({ user, channelId: bot.discord.guild.textChannelId, name: 'voice', subcommandGroup: group, subcommand, options });
    await sent.response;
    return bot.discord.waitFor(() => {
      const text = latestAnswer(bot, sent.interactionId);
      return text !== '""' && text;
    });
  }
  const talk = (user: APIUser) => runCommand(bot, user, 'voice', {}, 'talk').then((answer) => answer.text);
  const joinVoice = async (user: APIUser, channelId: string) => {
    bot.voice!.joinVoice(user, channelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, channelId).includes(user.id));
  };
  const leaveCall = async () => {
    const since = performance.now();
    await runCommand(bot, alice, 'voice', {}, 'leave');
    await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.some((request) => request.channelId === null && request.at >= since));
  };

  beforeAll(async () => {
    stt = await startFakeTranscription();
    bot = await startBotHarness({
      voice: true,
      discord: { guilds: [{ voiceChannels: ['General', 'Quiet'] }] },
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en' },
      script: () => ({ reply: 'Aye.', tokensPerSecond: 400 }),
    });
    guildId = bot.discord.guild.id;
    general = bot.discord.guild.channelIds['General']!;
    quiet = bot.discord.guild.channelIds['Quiet']!;
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    // The guild's owner holds every permission, Manage Server included.
    owner = { id: bot.discord.guild.ownerId } as APIUser;
    expect((await runCommand(bot, alice, 'character', { preset: 'en-us+m3' }, 'voice')).text).toContain('now speaks');
  });
  afterAll(async () => {
    await bot?.close();
    await stt?.close();
  });

  it('lets only a manager forbid listening in a channel or the server; /voice talk is refused there, saying who can allow it, until allowed again', async () => {
    expect(await voiceCommand(alice, 'listening', 'off')).toContain('Manage Server');
    expect(await voiceCommand(alice, 'listening', 'tuning', { silence_ms: 900 })).toContain('Manage Server');

    expect(await voiceCommand(owner, 'listening', 'off', { channel: quiet })).toContain(`<#${quiet}>`);
    await joinVoice(alice, quiet);
    const refused = await talk(alice);
    expect(refused).toContain('may not listen');
    expect(refused).toContain('Manage Server');
    expect(refused).toContain('/voice listening on');
    expect(bot.voice!.voiceStateRequests).toHaveLength(0);

    // The rest of the server is open, until the whole server is forbidden.
    await joinVoice(alice, general);
    expect(await talk(alice)).toContain('is listening');
    await leaveCall();
    expect(await voiceCommand(owner, 'listening', 'off')).toContain('this server');
    expect(await talk(alice)).toContain('may not listen in voice calls in this server');

    // Allowing the server leaves the channel's own ban in place.
    expect(await voiceCommand(owner, 'listening', 'on')).toContain('again');
    expect(await talk(alice)).toContain('is listening');
    await leaveCall();
    await joinVoice(alice, quiet);
    expect(await talk(alice)).toContain('may not listen');
    expect(await voiceCommand(owner, 'listening', 'on', { channel: quiet })).toContain(`<#${quiet}>`);
    expect(await talk(alice)).toContain('is listening');

    // Forbidding the channel of a call under way ends it.
    const since = performance.now();
    expect(await voiceCommand(owner, 'listening', 'off', { channel: quiet })).toContain('The call there has ended');
    await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.some((request) => request.channelId === null && request.at >= since));
    await voiceCommand(owner, 'listening', 'on', { channel: quiet });
    await joinVoice(alice, general);
  });

  it('keeps an opt-out across a restart: the member is never subscribed nor transcribed, and is heard again once back in', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    expect(await voiceCommand(carol, 'ignore', 'me')).toContain('no longer hear you');
    await bot.restart();

    await joinVoice(alice, general);
    await joinVoice(bob, general);
    await joinVoice(carol, general);
    expect(await talk(alice)).toContain('is listening');
    // Carol speaks low, bob high: what the engine is sent tells whose audio it was.
    const heard: string[] = [];
    stt.script = { hear: (file) => (heard.push(medianPitch(decodeWav(file).samples, 16_000) > 170 ? 'bob' : 'carol'), 'Just a remark.') };
    await bot.voice!.speak(carol, { text: 'You should not hear any of this.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
    await bot.voice!.speak(bob, { text: 'But you hear me.', voiceId: 'en-us+f3;pitch=85' }, { pace: 'burst' });
    await vi.waitFor(() => expect(heard.length).toBeGreaterThan(0), { timeout: 60_000, interval: 20 });
    expect(heard).toEqual(['bob']);
    expect(getVoiceConnection(guildId)!.receiver.subscriptions.has(carol.id)).toBe(false);

    // Back in: her next words are heard.
    expect(await voiceCommand(carol, 'ignore', 'me', { on: false })).toContain('hear you again');
    await bot.voice!.speak(carol, { text: 'Now you may hear me.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
    await vi.waitFor(() => expect(heard).toContain('carol'), { timeout: 60_000, interval: 20 });
    for (const user of [bob, carol]) bot.voice!.leaveVoice(user, guildId);
    await leaveCall();
  });

  it('stops hearing a member who opted out through another shard mid-call: their next turn is never written down nor stored', async () => {
    // Another shard's /voice ignore me: it writes the opt-out through its own rules over the same
    // database, and holds no call here to tell (VoiceTalk.setIgnored tells only its own calls).
    const otherShard = await openSqlStore(bot.storeUrl);
    try {
      const otherRules = new VoiceRules(otherShard.discordVoiceRules, { silenceMs: 600, minimumSpeechMs: 300 });
      const dana = bot.discord.createUser({ username: 'dana' });
      for (const user of [alice, bob, dana]) await joinVoice(user, general);
      const started = await talk(alice);
      const characterName = /\*\*(.+?)\*\* is listening/.exec(started)![1]!;
      // Dana speaks low, bob high: what the engine is sent tells whose audio it was.
      const heard: string[] = [];
      stt.script = {
        hear: (file) => {
          heard.push(medianPitch(decodeWav(file).samples, 16_000) > 170 ? 'bob' : 'dana');
          const count = heard.filter((who) => who === heard.at(-1)).length;
          return `${characterName}, this is ${heard.at(-1)} ${count}.`;
        },
      };
      /** The chat request answering `line`, once there is one (with several people only a turn naming the character is answered). */
      const answerTo = (line: string) =>
        vi.waitFor(() => bot.llm.requests.find((request) => request.path.endsWith('/chat/completions') && lastUserLine(request.body) === line) ?? Promise.reject(new Error(`${line} not answered yet`)), {
          timeout: 60_000,
          interval: 20,
        });
      // Heard and stored (answered: it names the character) while she has not opted out.
      let since = performance.now();
      await bot.voice!.speak(dana, { text: 'Here is my first remark.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
      await answerTo(`${characterName}, this is dana 1.`);
      await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs > 0 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 10_000 });
      const receiver = getVoiceConnection(guildId)!.receiver;
      expect(receiver.subscriptions.has(dana.id)).toBe(true);

      await otherRules.setIgnored(dana.id, true);
      since = performance.now();
      await bot.voice!.speak(dana, { text: 'And here is my second remark.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
      await bot.voice!.speak(bob, { text: 'What did she say?', voiceId: 'en-us+f3;pitch=85' }, { pace: 'burst' });
      // Turns are taken in the order they end: dana's, had it been heard, before bob's.
      const asked = await answerTo(`${characterName}, this is bob 1.`);
      expect(heard).toEqual(['dana', 'bob']);
      const history = JSON.stringify(asked.body.messages);
      expect(history).toContain('this is dana 1.');
      expect(history).not.toContain('this is dana 2.');
      // Her stream is let go at her turn's end: nothing of hers is decrypted or decoded any more.
      await vi.waitFor(() => expect(receiver.subscriptions.has(dana.id)).toBe(false), { timeout: 60_000, interval: 20 });
      for (const user of [bob, dana]) bot.voice!.leaveVoice(user, guildId);
      await leaveCall();
    } finally {
      await otherShard.close();
    }
  });

  it("ends turns at the server's own silence threshold, bounded, from the next call on", async () => {
    expect(await voiceCommand(owner, 'listening', 'tuning', { silence_ms: 50 })).toContain('from 200 to 3000');
    await joinVoice(alice, general);
    // Counted by the replies: alone with the character, every turn is answered once. (Not by
    // transcription requests: a turn is written down early, at 300 ms of quiet, and again in
    // whole when the person went on.)
    const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));
    const turnsOf = async (): Promise<number> => {
      expect(await talk(alice)).toContain('is listening');
      const before = chatRequests().length;
      // The engine tells the parts from the long last thought by length.
      stt.script = { hear: (file) => (durationMs(decodeWav(file)) < 4_000 ? 'Part of it.' : 'The last thought.') };
      // A pause longer than either threshold, then a last turn: turns are answered in the order
      // they end, so once it is answered every turn before it was.
      await bot.voice!.speak(alice, [{ text: 'One thing first.' }, { pauseMs: 700 }, { text: 'Then another.' }, { pauseMs: 1_500 }, { text: 'I have been thinking about the lighthouse and all of its ships for the whole of this long day.' }], { pace: 'burst' });
      await vi.waitFor(() => expect(chatRequests().slice(before).map((request) => lastUserLine(request.body))).toContain('The last thought.'), { timeout: 60_000, interval: 20 });
      const turns = chatRequests().slice(before).filter((request) => lastUserLine(request.body) === 'Part of it.').length;
      await leaveCall();
      return turns;
    };
    expect(await voiceCommand(owner, 'listening', 'tuning', { silence_ms: 500 })).toContain('**500 ms**');
    expect(await turnsOf()).toBe(2);
    expect(await voiceCommand(owner, 'listening', 'tuning', { silence_ms: 900 })).toContain('**900 ms**');
    expect(await turnsOf()).toBe(1);
    const reset = await voiceCommand(owner, 'listening', 'tuning', { reset: true });
    expect(reset).toContain('**600 ms**');
    expect(reset).toContain('allowed in every voice channel');
  });

  it("takes no turn of speech shorter than the server's own minimum, where the default minimum would", async () => {
    // The engine tells the two utterances apart by length: a short "yes" and a long thought.
    const heard: string[] = [];
    stt.script = { hear: (file) => (heard.push(durationMs(decodeWav(file)) < 2_500 ? 'Yes.' : 'A longer thought.'), heard.at(-1)!) };
    const answered = (text: string, since: number) => bot.llm.requests.slice(since).filter((request) => request.path.endsWith('/chat/completions') && lastUserLine(request.body) === text);
    await joinVoice(alice, general);
    // With the default minimum (300 ms), "yes, fine" is a turn, and alone with her it is answered.
    expect(await talk(alice)).toContain('is listening');
    let before = bot.llm.requests.length;
    await bot.voice!.speak(alice, { text: 'Yes, fine.' }, { pace: 'burst' });
    await vi.waitFor(() => expect(answered('Yes.', before)).toHaveLength(1), { timeout: 60_000, interval: 20 });
    await leaveCall();

    expect(await voiceCommand(owner, 'listening', 'tuning', { minimum_speech_ms: 1_500 })).toContain('shorter than **1500 ms**');
    expect(await talk(alice)).toContain('is listening');
    before = bot.llm.requests.length;
    await bot.voice!.speak(alice, [{ text: 'Yes, fine.' }, { pauseMs: 900 }, { text: 'I have been thinking about the lighthouse and its ships all day long.' }], { pace: 'burst' });
    // Turns are taken in the order they end: had the short one been a turn, it was answered first.
    await vi.waitFor(() => expect(answered('A longer thought.', before)).toHaveLength(1), { timeout: 60_000, interval: 20 });
    expect(answered('Yes.', before)).toHaveLength(0);
    // Not a turn at all: never even written down.
    expect(heard).toEqual(['Yes.', 'A longer thought.']);
    await leaveCall();
    await voiceCommand(owner, 'listening', 'tuning', { reset: true });
  });
});
