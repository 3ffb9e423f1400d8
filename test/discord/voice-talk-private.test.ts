/**
 * A voice call with someone else's public character, made private by its owner during the call
 * (issue 28, item 3): the next turn is stored but not answered, the engine is not asked, and the
 * call's chat says why, once. Turns reach the core as text channels' do (`Chat.respond`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { type BotHarness, runCommand, startBotHarness } from './harness.js';

describe('/voice talk with a character made private mid-call', () => {
  let bot: BotHarness;
  let stt: FakeTranscription;

  beforeAll(async () => {
    stt = await startFakeTranscription();
    bot = await startBotHarness({
      voice: true,
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en', VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS: '2000' },
      script: { reply: 'Aye.', tokensPerSecond: 400 },
    });
  });
  afterAll(async () => {
    await bot?.close();
    await stt?.close();
  });

  it('stops answering aloud, asks the engine nothing, and says so in the call’s chat', async () => {
    const { id: guildId, voiceChannelId } = bot.discord.guild;
    const [owner, caller] = [bot.discord.createUser({ username: 'voice-owner' }), bot.discord.createUser({ username: 'voice-caller' })];
    expect((await runCommand(bot, owner, 'character', { preset: 'en-us+m3' }, 'voice')).text).toContain('now speaks');
    expect((await runCommand(bot, owner, 'character', { name: 'Loud Lars', public: true }, 'edit')).text).toContain('Saved.');
    bot.voice!.joinVoice(caller, voiceChannelId!);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId!).includes(caller.id));
    expect((await runCommand(bot, caller, 'voice', { character: 'Loud Lars' }, 'talk')).text).toContain('is listening');
    const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions')).length;

    stt.script = { hear: () => 'Are you there?' };
    await bot.voice!.speak(caller, { text: 'Are you there?' }, { pace: 'burst' });
    await bot.discord.waitFor(() => chatRequests() === 1, 30_000);

    expect((await runCommand(bot, owner, 'character', { public: false }, 'edit')).text).toContain('Saved.');
    const transcribed = stt.transcriptions.length;
    stt.script = { hear: () => 'Still there?' };
    await bot.voice!.speak(caller, { text: 'Still there?' }, { pace: 'burst' });
    const told = await bot.discord.waitFor(() => bot.botTexts(voiceChannelId!).find((text) => text.startsWith('⚠️')), 30_000);
    expect(told).toContain('"Loud Lars" was made private by its owner');
    expect(stt.transcriptions.length).toBe(transcribed + 1);
    expect(chatRequests()).toBe(1);
  });
});
