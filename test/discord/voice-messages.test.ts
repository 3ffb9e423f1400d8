import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { APIUser } from 'discord-api-types/v10';
import { MessageFlags } from 'discord-api-types/v10';
import { encodeVoiceMessage } from '../../src/audio/voice-message.js';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { type BotHarness, startBotHarness } from './harness.js';

/** A second of a 440 Hz tone at 16 kHz, recorded the way Discord's apps record voice messages. */
async function recording() {
  const sampleRate = 16_000;
  const samples = new Int16Array(sampleRate);
  for (let index = 0; index < samples.length; index++) samples[index] = Math.round(8000 * Math.sin((2 * Math.PI * 440 * index) / sampleRate));
  const encoded = await encodeVoiceMessage({ samples, sampleRate });
  return { file: encoded.file, durationSeconds: encoded.durationSeconds, waveform: encoded.waveform };
}

/** How often the bot fetched these attachments from the fake's CDN. */
function downloadsOf(bot: BotHarness, attachments: ReadonlyArray<{ id: string }>): number {
  const ids = new Set(attachments.map((attachment) => attachment.id));
  return bot.discord.cdnRequests.filter((request) => request.attachmentId !== null && ids.has(request.attachmentId)).length;
}

/** The bot's first warning in a channel. */
function warning(bot: BotHarness, channelId: string): Promise<string> {
  return bot.discord.waitFor(() => bot.botTexts(channelId).find((text) => text.startsWith('⚠️')), 10_000);
}

/** The newest user line the engine was sent. */
const echo = (body: { messages?: Array<{ role: string; content: unknown }> }) => {
  const last = body.messages?.at(-1)?.content;
  return { reply: `You said: ${typeof last === 'string' ? last : '?'}`, tokensPerSecond: 200 };
};

describe('voice messages to characters, through discord.js and the fake Discord', () => {
  let stt: FakeTranscription;
  let bot: BotHarness;
  let alice: APIUser;

  beforeAll(async () => {
    stt = await startFakeTranscription();
    stt.script = { text: 'What is the weather like?' };
    bot = await startBotHarness({ script: echo, environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL } });
    alice = bot.discord.createUser({ username: 'alice' });
  });
  afterAll(async () => {
    await bot.close();
    await stt.close();
  });

  it('transcribes a voice message in a DM and answers its words', async () => {
    const dm = bot.discord.openDm(alice);
    const voice = await recording();
    bot.discord.sendMessage({ channelId: dm, author: alice, voiceMessage: voice });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('You said: What is the weather like?'), 10_000);
    // The engine heard the very file sent, named so it knows the format.
    const heard = stt.transcriptions.at(-1)!;
    expect(heard.file?.name).toMatch(/\.ogg$/);
    expect(Buffer.compare(heard.file!.bytes, Buffer.from(voice.file))).toBe(0);
  });

  it('transcribes a voice message in a conversation thread and answers there', async () => {
    const dave = bot.discord.createUser({ username: 'dave' });
    const channelId = bot.discord.guild.textChannelId;
    const choices = await bot.discord.sendAutocomplete({ user: dave, channelId, name: 'chat', options: { character: '' }, focused: 'character' });
    const own = choices.find((choice) => choice.name.endsWith('(yours)'))!;
    const before = bot.discord.threads.length;
    const opened = bot.discord.sendSlashCommand({ user: dave, channelId, name: 'chat', options: { character: String(own.value) } });
    await opened.response;
    const thread = await bot.discord.waitFor((fake) => fake.threads.length > before && fake.threads.at(-1));
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(opened.interactionId)).includes(`<#${thread.id}>`));
    stt.script = { text: 'Is it raining in the thread?' };
    try {
      const voice = await recording();
      bot.discord.sendMessage({ channelId: thread.id, author: dave, voiceMessage: voice });
      await bot.discord.waitFor(() => bot.botTexts(thread.id).includes('You said: Is it raining in the thread?'), 10_000);
      expect(Buffer.compare(stt.transcriptions.at(-1)!.file!.bytes, Buffer.from(voice.file))).toBe(0);
    } finally {
      stt.script = { text: 'What is the weather like?' };
    }
  });

  it('stores and answers a typed message sent right after a voice message after it, though transcription is slower', async () => {
    const erin = bot.discord.createUser({ username: 'erin' });
    const dm = bot.discord.openDm(erin);
    stt.script = { text: 'First, by voice.', delayMs: 800 };
    try {
      bot.discord.sendMessage({ channelId: dm, author: erin, voiceMessage: await recording() });
      bot.discord.sendMessage({ channelId: dm, author: erin, content: 'Second, typed.' });
      await bot.discord.waitFor(() => bot.botTexts(dm).length === 2, 10_000);
    } finally {
      stt.script = { text: 'What is the weather like?' };
    }
    expect(bot.botTexts(dm)).toEqual(['You said: First, by voice.', 'You said: Second, typed.']);
    // While the recording was written down, erin saw the bot typing.
    const typing = bot.discord.requests.find((request) => request.route === 'POST /channels/{channel.id}/typing' && request.path === `/channels/${dm}/typing`);
    const firstReply = bot.discord.messages(dm).find((message) => message.author.bot)!;
    expect(typing).toBeDefined();
    expect(typing!.timestamp).toBeLessThanOrEqual(bot.discord.messageHistory(firstReply.id)[0]!.timestamp);
    const prompt = JSON.stringify(bot.llm.requests.at(-1)!.body.messages);
    expect(prompt.indexOf('First, by voice.')).toBeLessThan(prompt.indexOf('Second, typed.'));
  });

  it('keeps a recording the speech-to-text engine failed to write down, says so, and the character knows it was not heard', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    const dm = bot.discord.openDm(carol);
    stt.script = { failWith: { status: 503, message: 'model loading' } };
    try {
      bot.discord.sendMessage({ channelId: dm, author: carol, voiceMessage: await recording() });
      const told = await bot.discord.waitFor(() => bot.botTexts(dm).find((text) => text.startsWith('⚠️')), 10_000);
      expect(told).toContain('Your recording is kept, but I could not hear it');
      expect(told).not.toContain('model loading');
    } finally {
      stt.script = { text: 'What is the weather like?' };
    }
    // Nothing reached the chat engine then; the next recording is answered, the first shown unheard.
    const chats = bot.llm.requests.length;
    bot.discord.sendMessage({ channelId: dm, author: carol, voiceMessage: await recording() });
    // Both of carol's lines reach the engine in one turn, the unheard one first.
    await bot.discord.waitFor(() => bot.botTexts(dm).some((text) => text.startsWith('You said:') && text.endsWith('What is the weather like?')), 10_000);
    expect(bot.llm.requests.length).toBe(chats + 1);
    const prompt = JSON.stringify(bot.llm.requests.at(-1)!.body.messages);
    expect(prompt.match(/a voice message that could not be written down/g)).toHaveLength(1);
    expect(prompt.match(/What is the weather like\?/g)).toHaveLength(1);
  });

  it('answers a voice message with a voice message of its own when asked to', async () => {
    const dm = bot.discord.openDm(alice);
    const voiced = bot.discord.sendSlashCommand({ user: alice, channelId: dm, name: 'character', subcommand: 'voice', options: { preset: 'en-us+f3' } });
    await voiced.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(voiced.interactionId)).includes('now speaks'), 10_000);
    const switched = bot.discord.sendSlashCommand({ user: alice, channelId: dm, name: 'voice', subcommand: 'replies', options: { on: true } });
    await switched.response;
    await bot.discord.waitFor(() => JSON.stringify(bot.discord.interactionResponses(switched.interactionId)).includes('with voice messages'), 10_000);

    // A typed message still gets text only.
    bot.discord.sendMessage({ channelId: dm, author: alice, content: 'typed words' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('You said: typed words'), 10_000);
    const isVoice = (message: { flags?: number }) => ((message.flags ?? 0) & MessageFlags.IsVoiceMessage) !== 0;
    const botVoices = () => bot.discord.messages(dm).filter((message) => message.author.id === bot.discord.botUser.id && isVoice(message));
    expect(botVoices()).toHaveLength(0);

    const sent = bot.discord.sendMessage({ channelId: dm, author: alice, voiceMessage: await recording() });
    const [reply] = await bot.discord.waitFor(() => botVoices().length === 1 && botVoices(), 20_000);
    expect(reply!.message_reference?.message_id).toBe(sent.id);
    expect(reply!.attachments).toHaveLength(1);
    expect(reply!.attachments[0]!.content_type).toBe('audio/ogg');
    expect(reply!.attachments[0]!.duration_secs).toBeGreaterThan(0.5);
    // The text reply came first, as always.
    expect(bot.botTexts(dm).filter((text) => text === 'You said: What is the weather like?').length).toBe(2);
  });

  it('refuses a recording larger than the core takes by the size Discord declares, without downloading it', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    const dm = bot.discord.openDm(carol);
    const heardBefore = stt.transcriptions.length;
    // 12 MiB: under the engine's 25 MB, over the core's 10 MB. Nitro lets a person send it.
    const sent = bot.discord.sendMessage({
      channelId: dm,
      author: carol,
      nitro: true,
      attachments: [{ filename: 'lecture.ogg', contentType: 'audio/ogg', bytes: new Uint8Array(12 * 1024 * 1024) }],
    });
    expect(await warning(bot, dm)).toContain('The audio is larger than 10 MB');
    expect(downloadsOf(bot, sent.attachments)).toBe(0);
    expect(stt.transcriptions.length).toBe(heardBefore);
  });

  it('answers the text of a message that carries a video, and leaves the video alone', async () => {
    const dave = bot.discord.createUser({ username: 'dave' });
    const dm = bot.discord.openDm(dave);
    const heardBefore = stt.transcriptions.length;
    // An MP4's first box: by its bytes it could pass for M4A audio.
    const video = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypisom'), Buffer.from([0, 0, 2, 0]), Buffer.from('isomiso2'), Buffer.alloc(64)]);
    const sent = bot.discord.sendMessage({ channelId: dm, author: dave, content: 'look at my cat', attachments: [{ filename: 'clip.mp4', contentType: 'video/mp4', bytes: video }] });
    expect(sent.attachments[0]!.content_type).toBe('video/mp4');
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('You said: look at my cat'), 10_000);
    expect(bot.botTexts(dm).filter((text) => text.startsWith('⚠️'))).toHaveLength(0);
    expect(stt.transcriptions.length).toBe(heardBefore);
    expect(downloadsOf(bot, sent.attachments)).toBe(0);
  });

  it('refuses a message with several recordings, saying why, before downloading any', async () => {
    const erin = bot.discord.createUser({ username: 'erin' });
    const dm = bot.discord.openDm(erin);
    const heardBefore = stt.transcriptions.length;
    const { file } = await recording();
    const attachments = ['first.ogg', 'second.ogg', 'third.ogg'].map((filename) => ({ filename, contentType: 'audio/ogg', bytes: file }));
    const sent = bot.discord.sendMessage({ channelId: dm, author: erin, attachments });
    expect(await warning(bot, dm)).toContain('Send one recording per message: this one has 3');
    expect(downloadsOf(bot, sent.attachments)).toBe(0);
    expect(stt.transcriptions.length).toBe(heardBefore);
  });

  it('refuses a message whose files together weigh more than it takes from one message, before downloading any', async () => {
    const frank = bot.discord.createUser({ username: 'frank' });
    const dm = bot.discord.openDm(frank);
    // Four photos of 9 MiB: each under the core's 10 MB, 36 MiB together.
    const photo = new Uint8Array(9 * 1024 * 1024);
    const attachments = [1, 2, 3, 4].map((index) => ({ filename: `photo-${index}.png`, contentType: 'image/png', bytes: photo }));
    const sent = bot.discord.sendMessage({ channelId: dm, author: frank, nitro: true, content: 'my holiday', attachments });
    expect(await warning(bot, dm)).toContain('The files of this message come to 36 MB, more than the 30 MB I take from one message');
    expect(downloadsOf(bot, sent.attachments)).toBe(0);
  });
});

describe('voice messages without a speech-to-text engine', () => {
  let bot: BotHarness;

  beforeAll(async () => {
    bot = await startBotHarness({ script: echo });
  });
  afterAll(async () => {
    await bot.close();
  });

  it('tells the user what is needed, and answers typed messages as before', async () => {
    const bob = bot.discord.createUser({ username: 'bob' });
    const dm = bot.discord.openDm(bob);
    const sent = bot.discord.sendMessage({ channelId: dm, author: bob, voiceMessage: await recording() });
    const told = await warning(bot, dm);
    expect(told).toContain('speech-to-text');
    // Refused before the recording was fetched from Discord.
    expect(downloadsOf(bot, sent.attachments)).toBe(0);
    bot.discord.sendMessage({ channelId: dm, author: bob, content: 'hello' });
    await bot.discord.waitFor(() => bot.botTexts(dm).includes('You said: hello'), 10_000);
  });
});
