/**
 * /voice talk in a call with DAVE, end-to-end encryption, negotiated as Discord requires it: the
 * whole service runs against the fake Discord, whose voice server plays the gateway's side of
 * DAVE and the people's clients (davey), so what they say reaches the bot encrypted end to end and
 * what the character answers leaves it so. One bot for the file; the tests follow one call.
 */
import { getVoiceConnection, type VoiceConnection } from '@discordjs/voice';
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { decodeWav } from '../../src/audio/wav.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { daveOf, daveSettled } from '../fake-discord-voice/dave-client.js';
import { type BotHarness, runCommand, startBotHarness } from './harness.js';

/** The newest user line of a chat request, as the engine saw it. */
function lastUserLine(body: FakeRequestBody): string {
  const last = body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
  return typeof last === 'string' ? last : JSON.stringify(last);
}

describe('/voice talk with DAVE end-to-end encryption', () => {
  let bot: BotHarness;
  let stt: FakeTranscription;
  let alice: APIUser;
  let bob: APIUser;
  let guildId: string;
  let channelId: string;
  let characterName: string;
  let connection: VoiceConnection;
  /** What the fake transcription server hears next, turn by turn. */
  let nextWords: string[] = [];
  const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));

  /** Waits until `text` was spoken to the end in the character's voice; every audio frame must have come end-to-end encrypted. */
  const replyHeard = async (since: number, text: string) => {
    const expectedMs = durationMs(await bot.voice!.synthesize(text, 'en-us+m3'));
    const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= expectedMs * 0.9 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 15_000 });
    expect(heard.packets.filter((packet) => !packet.silence).every((packet) => packet.endToEnd)).toBe(true);
    return heard;
  };

  beforeAll(async () => {
    stt = await startFakeTranscription();
    stt.script = { hear: () => nextWords.shift() ?? 'Something else.' };
    bot = await startBotHarness({
      voice: { dave: true },
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en' },
      script: (body) => ({ reply: `Aye. ${lastUserLine(body).replace(/^\w+: /, '')}`, tokensPerSecond: 400 }),
    });
    guildId = bot.discord.guild.id;
    channelId = bot.discord.guild.voiceChannelId!;
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    expect((await runCommand(bot, alice, 'character', { preset: 'en-us+m3' }, 'voice')).text).toContain('now speaks');
    bot.voice!.joinVoice(alice, channelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, channelId).includes(alice.id));
    const started = await runCommand(bot, alice, 'voice', {}, 'talk');
    characterName = /\*\*(.+?)\*\* is listening/.exec(started.text)?.[1] ?? '';
    expect(characterName, started.text).not.toBe('');
    connection = getVoiceConnection(guildId)!;
  });
  afterAll(async () => {
    await bot?.close();
    await stt?.close();
  });

  it('makes a DAVE group with the person in the call, then hears her turn end-to-end encrypted and answers it aloud, encrypted', async () => {
    const settled = await daveSettled(bot.voice!, connection, { guildId, channelId });
    expect(settled).toMatchObject({ id: 0, epoch: 1 });
    expect(connection.voicePrivacyCode).toBe(bot.voice!.daveMember(guildId, alice)!.session.voicePrivacyCode);

    nextWords = ['Where is the boat?'];
    const before = chatRequests().length;
    const since = performance.now();
    const spoken = await bot.voice!.speak(alice, { text: 'Where is the boat?' }, { pace: 'burst' });
    expect(spoken.talk[0]!.endToEndFrames).toBe(spoken.talk[0]!.opus.length);
    await replyHeard(since, 'Aye. Where is the boat?');
    expect(lastUserLine(chatRequests()[before]!.body)).toBe('Where is the boat?');
    // What was written down was her speech, decrypted: as long as what she said.
    const written = decodeWav(stt.transcriptions.at(-1)!.file!.bytes);
    expect(Math.abs(durationMs(written) - spoken.talk[0]!.pcmMs)).toBeLessThan(400);
    expect(bot.voice!.connections.at(-1)!.problems).toEqual([]);
  });

  it('subscribes again when 37 undecryptable frames (a client sending plain Opus) destroy her stream, and hears what she says next', async () => {
    // No transition executed since the bot got its keys: the library throws instead of starting over.
    expect(daveOf(connection)!.lastTransitionId).toBe(0);
    const failing = connection.receiver.subscriptions.get(alice.id)!;
    const transcribed = stt.transcriptions.length;
    const [garbled, words] = await Promise.all([bot.voice!.synthesize('You cannot read any of this at all.'), bot.voice!.synthesize('Still there?')]);
    // She goes on talking without a pause (the library sees no new start of speech): only the
    // session's own recovery can hear the rest.
    nextWords = ['Still there?'];
    const since = performance.now();
    await bot.voice!.speak(alice, garbled, { pace: 'burst', endToEnd: false });
    await bot.voice!.speak(alice, words, { pace: 'burst' });
    await replyHeard(since, 'Aye. Still there?');
    expect(failing.errored?.message).toContain('UnencryptedWhenPassthroughDisabled');
    expect(connection.receiver.subscriptions.get(alice.id)).not.toBe(failing);
    // Nothing of the undecryptable speech was taken for a turn.
    expect(stt.transcriptions.length).toBe(transcribed + 1);
  });

  it('goes on hearing and answering after someone joins the call and the group moves to a new epoch', async () => {
    const joinedAt = performance.now();
    bot.voice!.joinVoice(bob, channelId);
    const settled = await daveSettled(bot.voice!, connection, { guildId, channelId, since: joinedAt });
    expect(settled).toMatchObject({ epoch: 2, added: [bob.id] });
    // With two people in the call the character answers only when named.
    nextWords = [`${characterName}, is the lighthouse lit?`];
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Is the lighthouse lit?' }, { pace: 'burst' });
    await replyHeard(since, `Aye. ${characterName}, is the lighthouse lit?`);
    expect(bot.voice!.daveGroup(guildId, channelId)!.problems).toEqual([]);
  });
});
