/**
 * /voice talk against the fake Discord and its voice server: people speak (espeak, sent as
 * their clients would), the fake transcription server writes it down, the fake chat engine
 * answers, and the bot's espeak voice is heard back through the fake voice server.
 */
import { readFile, readdir } from 'node:fs/promises';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { getVoiceConnection } from '@discordjs/voice';
import type { APIUser } from 'discord-api-types/v10';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { durationMs } from '../../src/audio/pcm.js';
import { liveOpusInstances } from '../../src/audio/opus-memory.js';
import { decodeWav } from '../../src/audio/wav.js';
import type { PcmAudio } from '../../src/core/ports.js';
import type { FakeRequestBody } from '../fakes/fake-openai.js';
import { startFakeOpenAISpeech } from '../fakes/speech/fake-openai-speech.js';
import { FAKE_MS_PER_CHARACTER } from '../fakes/speech/tones.js';
import { type FakeTranscription, startFakeTranscription } from '../fakes/stt/fake-transcription.js';
import { medianPitch } from '../speech/signal-measures.js';
import { v2Png } from '../cards/card-fixtures.js';
import { type BotHarness, latestAnswer, runCommand, startBotHarness } from './harness.js';
import { patient } from '../support/patience.js';

const STORY = 'Once there was a lighthouse on a rock. Its keeper counted every ship that passed in the night. One winter a ship came that had no lights at all. The keeper rang the bell again and again until dawn. Nobody ever learned where that ship had sailed from.';

/** The newest user line of a chat request, as the engine saw it. */
function lastUserLine(body: FakeRequestBody): string {
  const last = body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
  return typeof last === 'string' ? last : JSON.stringify(last);
}

/** The newest line of a chat request, its speaker's name taken off (several people's turns in a row arrive as one user message). */
function lastLine(body: FakeRequestBody): string {
  return lastUserLine(body).split('\n').at(-1)!.replace(/^\w+: /, '');
}

/** Rows of the service's own SQLite database, read as another process would. */
function storedRows(bot: BotHarness, sql: string, ...values: string[]): Array<Record<string, unknown>> {
  const database = new DatabaseSync(bot.storeUrl.replace(/^sqlite:\/\//, ''), { readOnly: true });
  try {
    return database.prepare(sql).all(...values) as Array<Record<string, unknown>>;
  } finally {
    database.close();
  }
}

/**
 * Audio the service kept: messages with a file, and files in its file store that are audio
 * (WAV, Ogg, FLAC or MP3 by their first bytes) whatever their name.
 */
async function storedAudio(bot: BotHarness): Promise<string[]> {
  const attached = storedRows(bot, 'SELECT id FROM messages WHERE file_key IS NOT NULL').map((row) => `message ${String(row['id'])}`);
  const directory = path.join(path.dirname(bot.storeUrl.replace(/^sqlite:\/\//, '')), 'files');
  const names = await readdir(directory, { recursive: true, withFileTypes: true }).catch(() => []);
  const audio: string[] = [];
  for (const entry of names.filter((name) => name.isFile())) {
    const head = (await readFile(path.join(entry.parentPath, entry.name))).subarray(0, 4);
    const magic = head.toString('latin1');
    if (['RIFF', 'OggS', 'fLaC'].includes(magic) || magic.startsWith('ID3') || (head[0] === 0xff && (head[1]! & 0xe0) === 0xe0)) audio.push(entry.name);
  }
  return [...attached, ...audio];
}

/** A cough: decaying broadband noise, mono 48 kHz. */
function cough(milliseconds: number): PcmAudio {
  let seed = 11;
  const samples = new Int16Array((48_000 * milliseconds) / 1000);
  for (let index = 0; index < samples.length; index++) {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    samples[index] = Math.round(((seed / 2 ** 31) * 2 - 1) * 9000 * Math.exp(-index / (samples.length / 3)));
  }
  return { sampleRate: 48_000, samples };
}

/** An "mm-hm": a voiced hum, harmonics of 140 Hz, mono 48 kHz; shorter than the barge-in threshold, longer than the shortest turn. */
function hum(milliseconds: number): PcmAudio {
  const samples = new Int16Array((48_000 * milliseconds) / 1000);
  for (let index = 0; index < samples.length; index++) {
    let value = 0;
    for (let harmonic = 1; harmonic <= 8; harmonic++) value += Math.sin((2 * Math.PI * 140 * harmonic * index) / 48_000) / harmonic;
    samples[index] = Math.round(value * 5000 * Math.min(1, index / 960, (samples.length - index) / 960));
  }
  return { sampleRate: 48_000, samples };
}

/**
 * Event-driven waits on the fakes that have no waiting of their own (the transcription server,
 * the chat engine): their scripts call `notify` on each request, and `until` re-checks then.
 */
const waiters = new Set<() => void>();
const notify = (): void => {
  setImmediate(() => {
    for (const waiter of [...waiters]) waiter();
  });
};
function until<T>(check: () => T | undefined | null | false, timeoutMs = 15_000): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const evaluate = (): void => {
      const value = check();
      if (value === undefined || value === null || value === false) return;
      clearTimeout(timer);
      waiters.delete(evaluate);
      resolve(value);
    };
    const timer = setTimeout(() => {
      waiters.delete(evaluate);
      reject(new Error(`until: timed out after ${patient(timeoutMs)} ms`));
    }, patient(timeoutMs));
    waiters.add(evaluate);
    evaluate();
  });
}
/** The service's log says `userId`'s turn is over, in a line after the first `since` (the harness keeps its log). */
async function turnOver(bot: BotHarness, userId: string, since: number): Promise<void> {
  await vi.waitFor(
    () => {
      if (!bot.logs.slice(since).some((line) => line['msg'] === 'voice turn over' && line['userId'] === userId)) throw new Error(`${userId}'s turn is not over yet`);
    },
    { timeout: 60_000, interval: 20 },
  );
}
/** A transcription script that tells `until` when it was asked. */
const hearing = (hear: (file: Buffer) => string) => (file: Buffer) => {
  notify();
  return hear(file);
};

/**
 * A person alone in the harness's voice channel, their character given `preset` as its voice,
 * who has started /voice talk there.
 */
async function aloneInCall(bot: BotHarness, username: string, preset: string): Promise<APIUser> {
  const person = bot.discord.createUser({ username });
  const { id: guildId, voiceChannelId } = bot.discord.guild;
  expect((await runCommand(bot, person, 'character', { preset }, 'voice')).text).toContain('now speaks');
  bot.voice!.joinVoice(person, voiceChannelId!);
  await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId!).includes(person.id));
  expect((await runCommand(bot, person, 'voice', {}, 'talk')).text).toContain('is listening');
  return person;
}

describe('/voice talk: a conversation by voice in a call', () => {
  let bot: BotHarness;
  let stt: FakeTranscription;
  let alice: APIUser;
  let bob: APIUser;
  let guildId: string;
  let voiceChannelId: string;
  let characterName: string;
  /** What the fake hears next, turn by turn, when no test says otherwise. */
  let nextWords: string[] = [];

  /** Waits until `text` has been spoken to the end in `voiceId` (the call's character's by default): its length heard, then silence frames. */
  const replyHeard = async (since: number, text: string, voiceId = 'en-us+m3') => {
    const expectedMs = durationMs(await bot.voice!.synthesize(text, voiceId));
    return bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= expectedMs * 0.9 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 15_000 });
  };
  const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));

  beforeAll(async () => {
    stt = await startFakeTranscription();
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
    bot = await startBotHarness({
      voice: true,
      logs: true,
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en', VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS: '2000' },
      // The story is long and comes slowly enough to still be written when it is interrupted.
      // Its last line only: in a scene, what the others said since a character last spoke comes
      // to it in one user message.
      script: (body) => {
        notify();
        const line = lastUserLine(body).split('\n').at(-1)!;
        return line.includes('story') ? { reply: STORY, tokensPerSecond: 40 } : { reply: `Aye. ${line.replace(/^\w+: /, '')}`, tokensPerSecond: 400 };
      },
    });
    guildId = bot.discord.guild.id;
    voiceChannelId = bot.discord.guild.voiceChannelId!;
    alice = bot.discord.createUser({ username: 'alice' });
    bob = bot.discord.createUser({ username: 'bob' });
    const voiced = await runCommand(bot, alice, 'character', { preset: 'en-us+m3' }, 'voice');
    expect(voiced.text).toContain('now speaks');
    bot.voice!.joinVoice(alice, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(alice.id));
    const started = await runCommand(bot, alice, 'voice', {}, 'talk');
    const named = /\*\*(.+?)\*\* is listening/.exec(started.text);
    expect(named, started.text).not.toBeNull();
    characterName = named![1]!;
  });
  afterAll(async () => {
    await bot?.close();
    await stt?.close();
  });

  it('joins undeafened and says in the voice channel’s chat that it listens, to whom it answers and how to stop', () => {
    const join = bot.voice!.voiceStateRequests.at(-1)!;
    expect(join.channelId).toBe(voiceChannelId);
    expect(join.selfDeaf).toBe(false);
    const notice = bot.botTexts(voiceChannelId).at(-1) ?? '';
    expect(notice).toContain(`${characterName}** is listening`);
    expect(notice).toContain('/voice leave');
    expect(notice).toContain('/voice ignore me');
    expect(notice).toContain('/scene add');
  });

  it('answers one person’s turns aloud, in order, each written down from 16 kHz mono audio', async () => {
    nextWords = ['Where is the boat?', 'And the lighthouse?'];
    const before = chatRequests().length;
    for (const [index, words] of [...nextWords].entries()) {
      const since = performance.now();
      await bot.voice!.speak(alice, { text: words }, { pace: 'burst' });
      // The reply is heard: espeak's "Aye. <words>" in the character's voice, sentence by sentence.
      const heard = await replyHeard(since, `Aye. ${words}`);
      expect(heard.rms).toBeGreaterThan(0.02);
      expect(lastUserLine(chatRequests()[before + index]!.body)).toBe(words);
    }
    const wav = decodeWav(stt.transcriptions.at(-1)!.file!.bytes);
    expect(wav.sampleRate).toBe(16_000);
    expect(stt.transcriptions.at(-1)!.fields['language']).toBe('en');
    // The second request holds the first turn and the first reply: the call is stored as a conversation.
    const history = JSON.stringify(chatRequests().at(-1)!.body.messages);
    expect(history).toContain('Where is the boat?');
    expect(history).toContain('Aye. Where is the boat?');
  });

  it('writes a turn down while the person is quiet, before the turn is over, and uses that: one transcription, not two', async () => {
    nextWords = ['Is it early?'];
    const transcribed = stt.transcriptions.length;
    const requests = stt.loopback.requests.length;
    const before = chatRequests().length;
    const turnsOver = bot.logs.filter((line) => line['msg'] === 'voice turn over').length;
    const spoken = await bot.voice!.speak(alice, { text: 'Is it early?' }, { pace: 'burst' });
    const sentAt = spoken.talk[0]!.firstPacketAt;
    await until(() => chatRequests().length > before);
    // When the silence threshold ended the turn, its early transcript had been asked for and
    // stood: the reply uses it, not one asked at the turn's end.
    const over = bot.logs.filter((line) => line['msg'] === 'voice turn over').slice(turnsOver);
    expect(over).toEqual([expect.objectContaining({ userId: alice.id, early: true })]);
    expect(stt.loopback.requests.length).toBe(requests + 1);
    await replyHeard(sentAt, 'Aye. Is it early?');
    expect(stt.transcriptions.length).toBe(transcribed + 1);
    expect(lastUserLine(chatRequests()[before]!.body)).toBe('Is it early?');
  });

  it('drops the early transcript when the person goes on after a pause: the whole turn is written down and stored once', async () => {
    // The engine names how long the audio it got was, so the transcript shows which audio it was made of.
    const lengths: number[] = [];
    stt.script = { hear: hearing((file) => (lengths.push(Math.round(durationMs(decodeWav(file)) / 10) * 10), `Heard ${lengths.at(-1)} ms.`)), delayMs: 300 };
    const transcribed = stt.transcriptions.length;
    const before = chatRequests().length;
    const since = performance.now();
    // 450 ms: past the 300 ms mark, so the first part goes to be written down, short of the 600 ms that ends a turn.
    await bot.voice!.speak(alice, [{ text: 'I went to the shop.' }, { pauseMs: 450 }, { text: 'Then I came home.' }], { pace: 'burst' });
    const asked = await until(() => chatRequests()[before]);
    expect(stt.transcriptions.length).toBe(transcribed + 2);
    const [part, whole] = lengths.slice(-2) as [number, number];
    expect(whole).toBeGreaterThan(part + 900);
    // The reply is to the whole turn, and the part written down early was never stored.
    expect(lastUserLine(asked.body)).toBe(`Heard ${whole} ms.`);
    const heardLines = (asked.body.messages ?? []).filter((message) => typeof message.content === 'string' && message.content.includes('Heard '));
    expect(heardLines).toHaveLength(1);
    await replyHeard(since, `Aye. Heard ${whole} ms.`);
    expect(chatRequests().length).toBe(before + 1);
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
  });

  it('does not end a turn at a short pause with a cough in it, nor take the cough for a turn', async () => {
    nextWords = ['Wait a moment. Now I am back.'];
    const transcribed = stt.transcriptions.length;
    const since = performance.now();
    await bot.voice!.speak(alice, [{ text: 'Wait a moment.' }, { pauseMs: 250 }, cough(150), { pauseMs: 250 }, { text: 'Now I am back.' }], { pace: 'burst' });
    await replyHeard(since, 'Aye. Wait a moment. Now I am back.');
    expect(stt.transcriptions.length).toBe(transcribed + 1);
  });

  it('stops at once when talked over, cancels the rest, keeps only what was heard; a cough does not interrupt', async () => {
    nextWords = ['Tell me a story.'];
    const transcribed = stt.transcriptions.length;
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Tell me a story.' }, { pace: 'burst' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 1500, { since, timeoutMs: 15_000 });
    // A cough over the character: it goes on speaking.
    const coughedAt = performance.now();
    await bot.voice!.speak(alice, cough(150), { pace: 'burst' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 1000, { since: coughedAt, timeoutMs: 10_000 });

    nextWords = ['Stop, that is enough.'];
    const logged = bot.logs.length;
    const interrupting = await bot.voice!.speak(alice, { text: 'Stop, stop, that is quite enough of that story now.' }, { pace: 'burst' });
    const interruptedAt = interrupting.talk[0]!.firstPacketAt;
    // The interruption is answered as the next turn, and the cough was no turn at all.
    await until(() => chatRequests().some((request) => lastUserLine(request.body) === 'Stop, that is enough.'), 15_000);
    await replyHeard(interruptedAt, 'Aye. Stop, that is enough.');
    expect(stt.transcriptions.length).toBe(transcribed + 2);
    // Burst speech passes the 500 ms barge-in threshold as it arrives: playback stops there, and
    // what is heard from then until the turn is over (the reply cannot start sooner) is at most
    // the few frames already on their way: the long story does not play on.
    const lines = bot.logs.slice(logged);
    const epoch = (line: Record<string, unknown> | undefined) => Number(line?.['time']) - performance.timeOrigin;
    const stoppedAt = epoch(lines.find((line) => line['msg'] === 'interrupted by a person talking' && line['userId'] === alice.id));
    const overAt = epoch(lines.find((line) => line['msg'] === 'voice turn over' && line['userId'] === alice.id));
    expect(stoppedAt).toBeLessThan(overAt);
    const played = bot.voice!.heard(guildId, { since }).packets.filter((packet) => !packet.silence);
    expect(played.filter((packet) => packet.arrivedAt < stoppedAt).length).toBeGreaterThan(50);
    expect(played.filter((packet) => packet.arrivedAt > stoppedAt && packet.arrivedAt <= overAt).length).toBeLessThanOrEqual(5);
    const answering = chatRequests().find((request) => lastUserLine(request.body) === 'Stop, that is enough.')!;
    const kept = answering.body.messages?.filter((message) => message.role === 'assistant').at(-1)?.content as string;
    expect(kept.length).toBeGreaterThan(10);
    expect(kept.length).toBeLessThan(STORY.length - 40);
    expect(STORY.startsWith(kept.replace(/…$/, ''))).toBe(true);
    // Stored as heard and marked so, and nothing of the call's audio is kept, neither the turns nor the speech.
    const interrupted = storedRows(bot, "SELECT content FROM messages WHERE participant_type = 'character' AND finish_reason = ?", 'interrupted').map((row) => String(row['content']));
    expect(interrupted.some((content) => content.length > 10 && kept.startsWith(content.trim()))).toBe(true);
    expect(await storedAudio(bot)).toEqual([]);
  });

  it('queues what a person says while the character is still thinking, and answers it next', async () => {
    // Transcription is slow, so the second sentence ends while the first is still being written down.
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.'), delayMs: 900 };
    nextWords = ['First question.', 'Second question.'];
    const before = chatRequests().length;
    const since = performance.now();
    await bot.voice!.speak(alice, [{ text: 'First question.' }, { pauseMs: 800 }, { text: 'Second question.' }], { pace: 'burst' });
    await replyHeard(since, 'Aye. First question. Aye. Second question.');
    expect(chatRequests().slice(before).map((request) => lastUserLine(request.body))).toEqual(['First question.', 'Second question.']);
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
  });

  it('subscribes again when a receive stream fails (as DAVE decryption failures destroy it)', async () => {
    const receiver = getVoiceConnection(guildId)!.receiver;
    const failing = receiver.subscriptions.get(alice.id)!;
    const closed = new Promise((resolve) => failing.once('close', resolve));
    failing.destroy(new Error('Failed to decrypt: DAVE'));
    await closed;
    // Subscribed again once the database says she has not opted out meanwhile.
    const renewed = await vi.waitFor(() => receiver.subscriptions.get(alice.id) ?? Promise.reject(new Error('not subscribed again yet')), { timeout: 60_000, interval: 10 });
    expect(renewed).not.toBe(failing);
    nextWords = ['Still there?'];
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Still there?' }, { pace: 'burst' });
    await replyHeard(since, 'Aye. Still there?');
  });

  it('never hears another bot in the call (a music bot): not subscribed nor written down, and it does not interrupt', async () => {
    const jukebox = bot.discord.createUser({ username: 'jukebox', bot: true });
    bot.voice!.joinVoice(jukebox, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(jukebox.id));
    nextWords = ['Tell me a story.'];
    const transcribed = stt.transcriptions.length;
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Tell me a story.' }, { pace: 'burst' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 1000, { since, timeoutMs: 15_000 });
    // Music over the character, far longer than what interrupts it when a person talks.
    const playedAt = performance.now();
    await bot.voice!.speak(jukebox, { text: 'Never gonna give you up, never gonna let you down, never gonna run around and desert you.' }, { pace: 'burst' });
    // The story goes on, well past the music's end and the pause that would have ended its turn.
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 2500, { since: playedAt, timeoutMs: 15_000 });
    expect(getVoiceConnection(guildId)!.receiver.subscriptions.has(jukebox.id)).toBe(false);
    expect(stt.transcriptions.length).toBe(transcribed + 1);
    expect((await runCommand(bot, alice, 'voice', {}, 'stop', voiceChannelId)).text).not.toBe('');
    bot.voice!.leaveVoice(jukebox, guildId);
    await bot.voice!.waitFor(() => !bot.voice!.occupants(guildId, voiceChannelId).includes(jukebox.id));
  });

  it('does not answer an "mm-hm" said over the character once it has finished: it is kept as said, not asked', async () => {
    nextWords = ['Tell me a story.', 'Mm-hm.', 'What happened next?'];
    const before = chatRequests().length;
    const transcribed = stt.transcriptions.length;
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Tell me a story.' }, { pace: 'burst' });
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 1000, { since, timeoutMs: 15_000 });
    const saidAt = performance.now();
    await bot.voice!.speak(alice, hum(380), { pace: 'burst' });
    // Its turn is over (600 ms of silence) while the story goes on: a backchannel does not interrupt.
    await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 2000, { since: saidAt, timeoutMs: 15_000 });
    await until(() => stt.transcriptions.length >= transcribed + 2);
    await runCommand(bot, alice, 'voice', {}, 'stop', voiceChannelId);
    const askedAt = performance.now();
    await bot.voice!.speak(alice, { text: 'What happened next?' }, { pace: 'burst' });
    await replyHeard(askedAt, 'Aye. What happened next?');
    const asked = chatRequests().slice(before);
    expect(asked.map((request) => lastLine(request.body))).toEqual(['Tell me a story.', 'What happened next?']);
    // It was said, so it is in the conversation.
    expect(JSON.stringify(asked.at(-1)!.body.messages)).toContain('Mm-hm.');
  });

  it('gives up a turn the speech-to-text engine stalls on (VOICE_TALK_TRANSCRIPTION_TIMEOUT_MS) and answers the next', async () => {
    const before = chatRequests().length;
    const requests = stt.loopback.requests.length;
    stt.script = { hear: hearing(() => 'Lost words.'), delayMs: 6_000 };
    await bot.voice!.speak(alice, { text: 'Are you stuck?' }, { pace: 'burst' });
    await vi.waitFor(() => stt.loopback.requests[requests] ?? Promise.reject(new Error('not asked yet')), { timeout: 60_000, interval: 10 });
    // Only that request stalls: the script is read when a request comes.
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
    nextWords = ['Still with me?'];
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Still with me?' }, { pace: 'burst' });
    await replyHeard(since, 'Aye. Still with me?');
    expect(chatRequests().slice(before).map((request) => lastUserLine(request.body))).toEqual(['Still with me?']);
  });

  it('drops a turn being written down when its speaker opts out meanwhile: it is neither stored nor answered', async () => {
    const frank = bot.discord.createUser({ username: 'frank' });
    bot.voice!.joinVoice(frank, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(frank.id));
    // Frank speaks low, alice high; frank's words take a while to be written down.
    const words = (file: Buffer) => (medianPitch(decodeWav(file).samples, 16_000) > 170 ? `${characterName}, anyone else here?` : 'Frank was here.');
    stt.script = { hear: hearing(words), delayMs: 1_500 };
    const before = chatRequests().length;
    const requests = stt.loopback.requests.length;
    const turnsOver = bot.logs.length;
    await bot.voice!.speak(frank, { text: 'Frank was here, remember that.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
    await vi.waitFor(() => stt.loopback.requests[requests] ?? Promise.reject(new Error('not asked yet')), { timeout: 60_000, interval: 10 });
    stt.script = { hear: hearing(words) };
    // His turn is over and being written down when he opts out.
    await turnOver(bot, frank.id, turnsOver);
    const ignored = bot.discord.sendSlashCommand({ user: frank, channelId: bot.discord.guild.textChannelId, name: 'voice', subcommandGroup: 'ignore', subcommand: 'me', options: {} });
    await ignored.response;
    await bot.discord.waitFor(() => latestAnswer(bot, ignored.interactionId).includes('no longer hear you'));
    const since = performance.now();
    await bot.voice!.speak(alice, { text: 'Anyone else here?', voiceId: 'en-us+f3;pitch=85' }, { pace: 'burst' });
    await replyHeard(since, `Aye. ${characterName}, anyone else here?`);
    const asked = chatRequests().slice(before);
    expect(asked.map((request) => lastLine(request.body))).toEqual([`${characterName}, anyone else here?`]);
    expect(JSON.stringify(asked[0]!.body.messages)).not.toContain('Frank was here.');
    bot.voice!.leaveVoice(frank, guildId);
    await bot.voice!.waitFor(() => !bot.voice!.occupants(guildId, voiceChannelId).includes(frank.id));
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
  });

  it('hears two people talking at once on their own streams and stores each one’s words under their name; with two, answers only when named', async () => {
    bot.voice!.joinVoice(bob, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(bob.id));
    // Who is speaking is told apart by pitch: alice's character voice is low, bob speaks high.
    stt.script = {
      hear: hearing((file) => (medianPitch(decodeWav(file).samples, 16_000) > 170 ? 'I am the high voice.' : 'I am the low voice.')),
    };
    const requests = chatRequests().length;
    const transcribed = stt.transcriptions.length;
    const turnsOver = bot.logs.length;
    await Promise.all([
      bot.voice!.speak(alice, { text: 'I am talking with a low voice right now.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'realtime' }),
      bot.voice!.speak(bob, { text: 'And I am talking over you with a high voice.', voiceId: 'en-us+f3;pitch=85' }, { pace: 'realtime' }),
    ]);
    await until(() => stt.transcriptions.length >= transcribed + 2);
    // Those requests go out 300 ms into the silence, before the turns are over: alice speaking
    // again before her turn was over would carry it on, so wait for both to end.
    await turnOver(bot, alice.id, turnsOver);
    await turnOver(bot, bob.id, turnsOver);

    nextWords = [`${characterName}, who said what?`];
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
    await bot.voice!.speak(alice, { text: 'Who said what?' }, { pace: 'burst' });
    const asked = await until(() => chatRequests().find((request) => lastUserLine(request.body).includes('who said what')), 15_000);
    // The two turns in between were not addressed to the character, so they got no reply.
    expect(chatRequests().length).toBe(requests + 1);
    // Several people share the conversation now, so each turn is headed by its speaker's name.
    const history = (asked.body.messages ?? []).map((message) => (typeof message.content === 'string' ? message.content : '')).join('\n');
    expect(history).toContain('alice: I am the low voice.');
    expect(history).toContain('bob: I am the high voice.');
    expect(history).not.toContain('alice: I am the high voice.');
    expect(history).not.toContain('bob: I am the low voice.');
  });

  it('never transcribes a member who opted out with /voice ignore me', async () => {
    const carol = bot.discord.createUser({ username: 'carol' });
    const ignored = bot.discord.sendSlashCommand({ user: carol, channelId: bot.discord.guild.textChannelId, name: 'voice', subcommandGroup: 'ignore', subcommand: 'me', options: {} });
    await ignored.response;
    await bot.discord.waitFor(() => latestAnswer(bot, ignored.interactionId).includes('no longer hear you'));
    bot.voice!.joinVoice(carol, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(carol.id));
    // Carol speaks low, bob high: what the engine is sent tells whose audio it was.
    const heard: string[] = [];
    stt.script = { hear: hearing((file) => (heard.push(medianPitch(decodeWav(file).samples, 16_000) > 170 ? 'bob' : 'carol'), 'Just a remark.')) };
    await bot.voice!.speak(carol, { text: 'You should not hear any of this.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
    await bot.voice!.speak(bob, { text: 'But you hear me.', voiceId: 'en-us+f3;pitch=85' }, { pace: 'burst' });
    // Carol's turn would have ended first and been written down first.
    await until(() => heard.length > 0);
    expect(heard).toEqual(['bob']);
    // Never subscribed: the receiver drops her packets before decrypting them, and nothing decodes them.
    expect(getVoiceConnection(guildId)!.receiver.subscriptions.has(carol.id)).toBe(false);
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
  });

  it('in a call of three answers only turns that name a character, a scene character in its own voice (a stand-in without one); alone, the one who spoke last', async () => {
    // Bob gives his character a high voice and brings it into the call from the voice channel's chat.
    const voiced = await runCommand(bot, bob, 'character', { preset: 'en-us+f3;pitch=85' }, 'voice');
    const sceneName = /\*\*(.+?)\*\* now speaks/.exec(voiced.text)![1]!;
    const added = await runCommand(bot, bob, 'scene', { character: sceneName }, 'add', voiceChannelId);
    expect(added.text).toContain(`In the call, start with “${sceneName}, …”`);
    const dave = bot.discord.createUser({ username: 'dave' });
    bot.voice!.joinVoice(dave, voiceChannelId);
    await bot.voice!.waitFor(() => bot.voice!.occupants(guildId, voiceChannelId).includes(dave.id));
    // Alice, bob and dave are heard (carol opted out). Dave speaks low, bob high: the engine
    // hears whose turn it was by pitch, so the two turns cannot swap words.
    stt.script = { hear: hearing((file) => (medianPitch(decodeWav(file).samples, 16_000) > 170 ? `${characterName}, what do you think?` : 'Nice weather today.')) };
    const before = chatRequests().length;
    await bot.voice!.speak(dave, { text: 'Nice weather today.', voiceId: 'en-us+m3;pitch=15' }, { pace: 'burst' });
    let since = performance.now();
    await bot.voice!.speak(bob, { text: 'What do you think?', voiceId: 'en-us+f3;pitch=85' }, { pace: 'burst' });
    const callReply = await replyHeard(since, `Aye. ${characterName}, what do you think?`);
    // Dave's turn named nobody: stored (the reply's prompt holds it) but not answered.
    const asked = chatRequests().slice(before);
    expect(asked.map((request) => lastLine(request.body))).toEqual([`${characterName}, what do you think?`]);
    expect(JSON.stringify(asked[0]!.body.messages)).toContain('dave: Nice weather today.');

    /** The median pitch of what the bot played, left channel of its 48 kHz stereo. */
    const pitchOf = (heard: { pcm: Int16Array }) => medianPitch(heard.pcm.filter((_, index) => index % 2 === 0), 48_000);
    const callPitch = pitchOf(callReply);
    stt.script = { hear: hearing(() => nextWords.shift() ?? 'Something else.') };
    nextWords = [`${sceneName}, and you?`];
    since = performance.now();
    await bot.voice!.speak(alice, { text: 'And you?' }, { pace: 'burst' });
    const sceneReply = await replyHeard(since, `Aye. ${sceneName}, and you?`, 'en-us+f3;pitch=85');
    expect(chatRequests().slice(before).map((request) => lastLine(request.body))).toEqual([`${characterName}, what do you think?`, `${sceneName}, and you?`]);
    // The scene's character answered, as itself and in its own voice.
    expect(JSON.stringify(chatRequests().at(-1)!.body.messages![0])).toContain(`You are ${sceneName}.`);
    expect(pitchOf(sceneReply)).toBeGreaterThan(1.4 * callPitch);

    // Alone again, a turn naming nobody goes on with whoever spoke last: the scene's character.
    const receiver = getVoiceConnection(guildId)!.receiver;
    expect(receiver.subscriptions.has(bob.id) && receiver.subscriptions.has(dave.id)).toBe(true);
    const decoders = liveOpusInstances();
    for (const user of [bob, dave]) bot.voice!.leaveVoice(user, guildId);
    await bot.voice!.waitFor(() => !bot.voice!.occupants(guildId, voiceChannelId).some((id) => id === bob.id || id === dave.id));
    // Those who left are no longer heard: their streams and decoders are freed now, not when the call ends.
    await vi.waitFor(() => (receiver.subscriptions.has(bob.id) || receiver.subscriptions.has(dave.id) || liveOpusInstances() !== decoders - 2 ? Promise.reject(new Error('still hearing them')) : true), { timeout: 60_000, interval: 10 });
    nextWords = ['What else?'];
    since = performance.now();
    await bot.voice!.speak(alice, { text: 'What else?' }, { pace: 'burst' });
    const followUp = await replyHeard(since, 'Aye. What else?', 'en-us+f3;pitch=85');
    expect(pitchOf(followUp)).toBeGreaterThan(1.4 * callPitch);

    // A scene character without a voice of its own is heard too, in a stand-in voice nobody in
    // the scene has: espeak's first English one.
    // Dave's own character, named after him, has no voice.
    const mute = await runCommand(bot, dave, 'scene', { character: 'dave' }, 'add', voiceChannelId);
    expect(mute.text).toContain('stand-in voice');
    nextWords = ['dave, are you there?'];
    since = performance.now();
    await bot.voice!.speak(alice, { text: 'Are you there?' }, { pace: 'burst' });
    const standIn = await replyHeard(since, 'Aye. dave, are you there?', 'en-us');
    expect(standIn.rms).toBeGreaterThan(0.02);
    expect(JSON.stringify(chatRequests().at(-1)!.body.messages![0])).toContain('You are dave.');

    // /scene next in the voice channel's chat has a character speak now: aloud, in its voice.
    const requested = chatRequests().length;
    since = performance.now();
    expect((await runCommand(bot, alice, 'scene', { character: sceneName }, 'next', voiceChannelId)).text).toContain('answers aloud in the call');
    await until(() => chatRequests().length > requested);
    expect(JSON.stringify(chatRequests().at(-1)!.body.messages![0])).toContain(`You are ${sceneName}.`);
    const cued = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 500 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 15_000 });
    expect(pitchOf(cued)).toBeGreaterThan(1.4 * callPitch);

    // A character joining the scene with a greeting says it aloud too (written, not generated).
    const imported = bot.discord.sendSlashCommand({ user: alice, channelId: bot.discord.guild.textChannelId, name: 'character', subcommand: 'import', options: { file: { filename: 'bram.png', contentType: 'image/png', bytes: Buffer.from(v2Png()) } } });
    await imported.response;
    await bot.discord.waitFor(() => latestAnswer(bot, imported.interactionId).includes('Made **Bram**'));
    const [bram] = await bot.discord.sendAutocomplete({ user: alice, channelId: voiceChannelId, name: 'scene', subcommand: 'add', options: { character: 'bram' }, focused: 'character' });
    const generated = chatRequests().length;
    since = performance.now();
    expect((await runCommand(bot, alice, 'scene', { character: String(bram!.value) }, 'add', voiceChannelId)).text).toContain('Bram');
    const greeted = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= 500 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 15_000 });
    expect(greeted.rms).toBeGreaterThan(0.02);
    expect(bot.botTexts(voiceChannelId).some((text) => text.includes('Who goes there?'))).toBe(true);
    expect(chatRequests()).toHaveLength(generated);
  });

  it('leaves when no person is left in the call', async () => {
    for (const user of bot.voice!.occupants(guildId, voiceChannelId).filter((id) => id !== bot.discord.botUser.id)) bot.voice!.leaveVoice(user, guildId);
    await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.at(-1)?.channelId === null);
  });
});

describe('/voice talk when nobody says anything', () => {
  it('leaves the call after DISCORD_VOICE_IDLE_SECONDS with nothing said', async () => {
    const stt = await startFakeTranscription();
    const bot = await startBotHarness({ voice: true, environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, DISCORD_VOICE_IDLE_SECONDS: '1' } });
    try {
      await aloneInCall(bot, 'dana', 'en-us+m3');
      const joinedAt = performance.now();
      const left = await bot.voice!.waitFor(() => bot.voice!.voiceStateRequests.find((request) => request.channelId === null && request.at >= joinedAt));
      expect(left.at - joinedAt).toBeGreaterThanOrEqual(900);
    } finally {
      await bot.close();
      await stt.close();
    }
  });
});

describe('/voice talk with a long turn', () => {
  it('writes a turn longer than VOICE_TALK_MAXIMUM_TURN_MS down in parts as the person goes on, and answers only its last part', async () => {
    const stt = await startFakeTranscription();
    let part = 0;
    // The long turn is said low, the question after it high: the engine tells them apart by pitch.
    stt.script = { hear: (file) => (medianPitch(decodeWav(file).samples, 16_000) > 170 ? 'Done?' : `Part ${++part}.`) };
    const bot = await startBotHarness({
      voice: true,
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, VOICE_TALK_LANGUAGE: 'en', VOICE_TALK_MAXIMUM_TURN_MS: '2000' },
      script: (body) => ({ reply: `Aye. ${lastUserLine(body).split('\n').at(-1)!.replace(/^\w+: /, '')}`, tokensPerSecond: 400 }),
    });
    try {
      const erin = await aloneInCall(bot, 'erin', 'en-us+m3');
      const chats = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));
      // About seven seconds without a pause: cut at two, four and six seconds.
      await bot.voice!.speak(erin, [{ text: STORY.split('. ').slice(0, 2).join('. '), voiceId: 'en-us+m3;pitch=15' }, { pauseMs: 1_000 }, { text: 'Are you done?', voiceId: 'en-us+f3;pitch=85' }], { pace: 'burst' });
      await vi.waitFor(() => expect(chats().map((request) => lastUserLine(request.body))).toContainEqual(expect.stringMatching(/Done\?$/)), { timeout: 60_000, interval: 20 });
      // Turns are answered in the order they end: every part was taken before "Done?". Only the
      // last part of the long turn was answered, and its prompt held the parts before it.
      const answered = chats().map((request) => lastUserLine(request.body).split('\n').at(-1)!);
      expect(part).toBeGreaterThanOrEqual(3);
      expect(answered).toEqual([`Part ${part}.`, 'Done?']);
      expect(JSON.stringify(chats()[0]!.body.messages)).toContain('Part 1.');
    } finally {
      await bot.close();
      await stt.close();
    }
  });
});

describe('/voice talk with a speech engine that streams', () => {
  it('keeps none of a reply its speech engine could not speak: the character’s next prompt holds only what was heard', async () => {
    const stt = await startFakeTranscription();
    const words = ['Is the harbour quiet?', 'Are you there?'];
    stt.script = { hear: hearing(() => words.shift() ?? 'Something else.') };
    const speech = await startFakeOpenAISpeech();
    const bot = await startBotHarness({
      voice: true,
      script: (body) => {
        notify();
        return { reply: `Aye. ${lastLine(body)} The boats are home.` };
      },
      environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, TTS_ENGINE: 'openai', TTS_BASE_URL: speech.apiURL },
    });
    const chatRequests = () => bot.llm.requests.filter((request) => request.path.endsWith('/chat/completions'));
    try {
      const erin = await aloneInCall(bot, 'erin', 'alloy');
      // The speech engine is down: every sentence of the reply fails with OpenAI's 500.
      speech.script = { failure: { kind: 'http', status: 500 } };
      await bot.voice!.speak(erin, { text: 'Is the harbour quiet?' }, { pace: 'burst' });
      await until(() => chatRequests().some((request) => lastLine(request.body) === 'Is the harbour quiet?'));
      await bot.voice!.speak(erin, { text: 'Are you there?' }, { pace: 'burst' });
      // Turns are taken one at a time: the next is answered only once the first reply was stored as heard.
      const next = await until(() => chatRequests().find((request) => lastLine(request.body) === 'Are you there?'));
      const replies = next.body.messages?.filter((message) => message.role === 'assistant').map((message) => String(message.content)) ?? [];
      expect(replies.join('\n')).not.toContain('harbour');
      expect(replies.join('\n')).not.toMatch(/500|server had an error/);
      const unheard = storedRows(bot, "SELECT content FROM messages WHERE participant_type = 'character' AND finish_reason = ?", 'unheard');
      expect(unheard.map((row) => row['content'])).toContain('…');
    } finally {
      await bot.close();
      await speech.close();
      await stt.close();
    }
  });

  it('plays a sentence from its first audio on, while the engine is still making the rest, and plays all of it', async () => {
    const SENTENCE = 'The harbour lights are burning bright tonight, and every boat is safely home.';
    const stt = await startFakeTranscription();
    stt.script = { text: 'Is the harbour quiet?' };
    const speech = await startFakeOpenAISpeech();
    // 4,001 bytes of 24 kHz audio (83 ms) every 60 ms: the sentence's 4.7 s take the engine about 3.4 s.
    speech.script = { chunkDelayMs: 60, firstAudioDelayMs: 100 };
    const bot = await startBotHarness({ voice: true, script: () => ({ reply: SENTENCE }), environment: { STT_ENGINE: 'openai', STT_BASE_URL: stt.apiURL, TTS_ENGINE: 'openai', TTS_BASE_URL: speech.apiURL } });
    try {
      const erin = await aloneInCall(bot, 'erin', 'alloy');
      const guildId = bot.discord.guild.id;
      const since = performance.now();
      await bot.voice!.speak(erin, { text: 'Is the harbour quiet?' }, { pace: 'burst' });
      const expectedMs = SENTENCE.length * FAKE_MS_PER_CHARACTER;
      const heard = await bot.voice!.waitForAudio(guildId, (audio) => audio.durationMs >= expectedMs * 0.9 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 20_000 });
      const asked = speech.requests.at(-1)!.receivedAt;
      const firstAudible = heard.packets.find((packet) => !packet.silence)!.arrivedAt;
      expect(firstAudible - asked).toBeLessThan(1000);
    } finally {
      await bot.close();
      await speech.close();
      await stt.close();
    }
  });
});
