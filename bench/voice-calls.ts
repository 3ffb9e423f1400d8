/**
 * Issue 23's "ten calls at once in ten guilds, two speakers each: CPU per call, no lost or
 * misattributed turn". The service runs as `npm start` runs it (its own process), against the
 * fake Discord with ten guilds and its voice server, the fake transcription server and the fake
 * chat engine, which share this process. In each guild two people join the voice channel, one
 * starts `/voice talk`, and both say espeak sentences in real time, sometimes over each other;
 * most turns start with the character's name, so it answers them aloud (espeak in the service).
 *
 * Who said which turn is carried in the audio itself: under each sentence a quiet steady tone is
 * mixed whose frequency is the turn's code (guild, speaker, turn). The fake transcription server
 * finds the tone in the WAV the service sends it (Goertzel over the code frequencies) and writes
 * the turn down as "<character>, this is g3_bob, turn 2: <sentence>". Afterwards the stored
 * conversations, read through the HTTP API with the admin key, must hold every turn once, under
 * the account of the person whose stream carried it, in their guild's conversation.
 *
 * CPU is the service process's utime + stime from /proc, over the talking, and over a quiet
 * stretch with the ten calls joined and nobody speaking.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { decodeWav } from '../src/audio/wav.js';
import type { PcmAudio } from '../src/core/ports.js';
import type { APIUser } from 'discord-api-types/v10';
import { startFakeOpenAI } from '../test/fakes/fake-openai.js';
import { startFakeTranscription } from '../test/fakes/stt/fake-transcription.js';
import { ApiClient } from './api-client.js';
import { type ServiceLogEntry, startServiceProcess } from './processes.js';
import { percentile, round } from './stats.js';
import { startVoiceWorld } from './voice-world.js';

const SPEAKERS = ['ann', 'bob'] as const;
/** ann speaks in espeak's female voice, bob in the male one (as two people would). */
const SPEAKER_VOICES = { ann: 'en-us+f3', bob: 'en-us+m3' } as const;
const SENTENCES = [
  'I think the boat will come back before the storm.',
  'The keeper told me a strange story today.',
  'What will the weather be like tomorrow?',
  'We walked along the harbour until dark.',
  'My sister says the fish are biting near the rocks.',
  'Is the lighthouse lit every single night?',
];
/** The sentence a turn says (and the fake transcription writes down). */
const sentenceOf = (tag: TurnTag) => SENTENCES[(tag.guild * 2 + tag.turn + (tag.speaker === 'bob' ? 1 : 0)) % SENTENCES.length]!;
const REPLY = 'Aye, I hear you well. The harbour is quiet tonight.';
/** The turn (1-based) of each speaker said to the room, not to the character: it gets no answer. */
const UNNAMED_TURN = 3;

/** The tone carrying a turn's code: frequencies CODE_BASE_HZ + code × CODE_STEP_HZ. */
const CODE_BASE_HZ = 1000;
const CODE_STEP_HZ = 25;
/** About −20 dB under espeak's loudest samples: heard by Goertzel, not by the VAD's ear for speech. */
const CODE_AMPLITUDE = 2500;

export interface TurnTag {
  guild: number;
  speaker: (typeof SPEAKERS)[number];
  turn: number;
}

export const userName = (guild: number, speaker: string) => `g${guild + 1}_${speaker}`;
/** Not starting with the speaker's name: their own character is named after them (the account's default). */
const tagText = (tag: TurnTag) => `this is ${userName(tag.guild, tag.speaker)}, turn ${tag.turn}`;
const TAG_PATTERN = /\bthis is g(\d+)_(ann|bob), turn (\d+)\b/;

export function parseTag(text: string): TurnTag | undefined {
  const match = TAG_PATTERN.exec(text);
  return match ? { guild: Number(match[1]) - 1, speaker: match[2] as TurnTag['speaker'], turn: Number(match[3]) } : undefined;
}

export function codeOf(tag: TurnTag, turnsPerSpeaker: number): number {
  return (tag.guild * SPEAKERS.length + SPEAKERS.indexOf(tag.speaker)) * turnsPerSpeaker + (tag.turn - 1);
}

export function tagOf(code: number, turnsPerSpeaker: number): TurnTag {
  const turn = (code % turnsPerSpeaker) + 1;
  const person = Math.floor(code / turnsPerSpeaker);
  return { guild: Math.floor(person / SPEAKERS.length), speaker: SPEAKERS[person % SPEAKERS.length]!, turn };
}

/** `pcm` with the code's tone mixed under it, from its first sample to its last. */
export function withCodeTone(pcm: PcmAudio, code: number): PcmAudio {
  const frequency = CODE_BASE_HZ + code * CODE_STEP_HZ;
  const samples = new Int16Array(pcm.samples.length);
  for (let index = 0; index < samples.length; index++) {
    const mixed = pcm.samples[index]! + CODE_AMPLITUDE * Math.sin((2 * Math.PI * frequency * index) / pcm.sampleRate);
    samples[index] = Math.max(-32768, Math.min(32767, Math.round(mixed)));
  }
  return { sampleRate: pcm.sampleRate, samples };
}

/** Power of `frequency` in `samples` (Goertzel). */
function goertzel(samples: ArrayLike<number>, sampleRate: number, frequency: number): number {
  const coefficient = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let previous = 0;
  let beforePrevious = 0;
  for (let index = 0; index < samples.length; index++) {
    const current = samples[index]! + coefficient * previous - beforePrevious;
    beforePrevious = previous;
    previous = current;
  }
  return previous * previous + beforePrevious * beforePrevious - coefficient * previous * beforePrevious;
}

/** The code whose tone is loudest in `pcm`, and how much louder it is than the runner-up (power ratio). */
export function findCode(pcm: PcmAudio, codes: number): { code: number; margin: number; runnerUp: number } {
  const powers = Array.from({ length: codes }, (_, code) => goertzel(pcm.samples, pcm.sampleRate, CODE_BASE_HZ + code * CODE_STEP_HZ));
  const order = powers.map((power, code) => ({ power, code })).sort((left, right) => right.power - left.power);
  return { code: order[0]!.code, margin: order[0]!.power / Math.max(order[1]?.power ?? 0, 1e-9), runnerUp: order[1]?.code ?? -1 };
}

const sleep = (milliseconds: number) => new Promise((resolve) => setTimeout(resolve, milliseconds));

async function until<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs: number, intervalMs = 250): Promise<T | undefined> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined || performance.now() > deadline) return value;
    await sleep(intervalMs);
  }
}

interface StoredMessageView {
  id: string;
  content: string;
  participant_id: string;
  participant_type: 'account' | 'character';
  finish_reason?: string;
}
interface ConversationView {
  id: string;
  speakers: Array<{ id: string; name: string; type: string }>;
  messages: StoredMessageView[];
}

export async function benchmarkVoiceCalls(dataDir: string, options: { guilds?: number; turnsPerSpeaker?: number } = {}) {
  const guildCount = options.guilds ?? Number(process.env.BENCH_VOICE_CALLS ?? 10);
  const turnsPerSpeaker = options.turnsPerSpeaker ?? Number(process.env.BENCH_VOICE_CALL_TURNS ?? 5);
  const codes = guildCount * SPEAKERS.length * turnsPerSpeaker;
  await mkdir(dataDir, { recursive: true });
  const adminKey = 'bench-admin-key-voice-calls-0123456789';

  const world = await startVoiceWorld(guildCount);
  const { discord, voice } = world;

  /** Each guild's character name, read from its `/voice talk` answer. */
  const characterNames: string[] = [];
  /** What the transcription server decoded, request by request. */
  const transcribed: Array<{ tag: TurnTag; margin: number; runnerUp: TurnTag; seconds: number }> = [];
  const stt = await startFakeTranscription();
  stt.script = {
    hear: (file) => {
      const audio = decodeWav(file);
      const { code, margin, runnerUp } = findCode(audio, codes);
      const tag = tagOf(code, turnsPerSpeaker);
      transcribed.push({ tag, margin, runnerUp: tagOf(runnerUp, turnsPerSpeaker), seconds: audio.samples.length / audio.sampleRate });
      const words = `${tagText(tag)}: ${sentenceOf(tag)}`;
      return tag.turn === UNNAMED_TURN ? words : `${characterNames[tag.guild] ?? 'Someone'}, ${words}`;
    },
  };
  const chat = await startFakeOpenAI({ recordRequests: true, script: () => ({ reply: REPLY }) });

  const log = { heard: 0, interrupted: 0, failed: 0, turnsOver: 0, playerErrors: 0 };
  const service = await startServiceProcess(
    {
      PORT: '0',
      DATA_DIR: dataDir,
      ADMIN_API_KEY: adminKey,
      ...world.serviceEnvironment,
      LLM_BASE_URL: chat.baseURL,
      LLM_MODEL: 'fake-model',
      STT_ENGINE: 'openai',
      STT_BASE_URL: stt.apiURL,
      LOG_LEVEL: 'debug',
    },
    (entry: ServiceLogEntry) => {
      if (entry.msg === 'voice turn over') log.turnsOver++;
      if (entry.msg === 'voice turn heard') log.heard++;
      if (entry.msg === 'interrupted by a person talking') log.interrupted++;
      if (entry.msg === 'a voice turn failed') log.failed++;
      if (entry.msg === 'voice talk player error') log.playerErrors++;
    },
  );
  const api = new ApiClient(service.url, adminKey);
  try {
    // Each guild: ann gives her character a voice, joins, starts the call; bob joins.
    const people: Array<Record<TurnTag['speaker'], APIUser>> = [];
    for (let index = 0; index < guildCount; index++) {
      const guild = discord.guilds[index]!;
      const ann = discord.createUser({ username: userName(index, 'ann'), guildIds: [guild.id] });
      const bob = discord.createUser({ username: userName(index, 'bob'), guildIds: [guild.id] });
      people.push({ ann, bob });
      const run = async (name: string, commandOptions: Record<string, string>, subcommand: string, expected: string) => {
        const sent = discord.sendSlashCommand({ user: ann, channelId: guild.textChannelId, name, options: commandOptions, subcommand });
        await sent.response;
        await discord.waitFor(() => JSON.stringify(discord.interactionResponses(sent.interactionId)).includes(expected), 20_000);
        return JSON.stringify(discord.interactionResponses(sent.interactionId));
      };
      await run('character', { preset: 'en-us+m3' }, 'voice', 'now speaks');
      voice.joinVoice(ann, guild.voiceChannelId!);
      await voice.waitFor(() => voice.occupants(guild.id, guild.voiceChannelId!).includes(ann.id));
      const started = await run('voice', {}, 'talk', 'is listening');
      characterNames[index] = /\*\*(.+?)\*\* is listening/.exec(started)?.[1] ?? 'Someone';
      voice.joinVoice(bob, guild.voiceChannelId!);
      await voice.waitFor(() => voice.occupants(guild.id, guild.voiceChannelId!).includes(bob.id));
    }

    // Everything said, synthesised before anything is timed.
    const speech = new Map<string, PcmAudio>();
    const key = (tag: TurnTag) => `${tag.guild}/${tag.speaker}/${tag.turn}`;
    for (let code = 0; code < codes; code++) {
      const tag = tagOf(code, turnsPerSpeaker);
      speech.set(key(tag), withCodeTone(await voice.synthesize(sentenceOf(tag), SPEAKER_VOICES[tag.speaker]), code));
    }
    // And encoded, as each person's client does while capturing: encoding here when a turn starts
    // would hold up the packets of the others talking (up to 0.7 s with ten calls at once).
    voice.encodeAhead([...speech.values()]);
    const replyPcm = await voice.synthesize(REPLY, 'en-us+m3');
    const replySeconds = replyPcm.samples.length / replyPcm.sampleRate;
    const speechSeconds = [...speech.values()].map((pcm) => pcm.samples.length / pcm.sampleRate);

    // Ten calls joined, nobody speaking.
    const quietMs = 5_000;
    const quietBefore = await service.usage();
    await sleep(quietMs);
    const quietAfter = await service.usage();

    // The talking: every guild at once, a little apart; in each, rounds of both people speaking,
    // every third round over each other (bob starts 0.7 s into ann's sentence), else one after the
    // other, 4 s apart (time for the answer to the first to be heard), and 4.5 s after each round.
    let overlapping = 0;
    const senderLateMs: number[] = [];
    const say = (guild: number, speaker: TurnTag['speaker'], turn: number) =>
      voice.speak(people[guild]![speaker], speech.get(key({ guild, speaker, turn }))!, { pace: 'realtime' }).then((spoken) => void senderLateMs.push(spoken.maxLateMs));
    const usageBefore = await service.usage();
    const benchBefore = process.cpuUsage();
    const talkStarted = performance.now();
    await Promise.all(
      Array.from({ length: guildCount }, async (_, guild) => {
        await sleep(guild * 350);
        for (let turn = 1; turn <= turnsPerSpeaker; turn++) {
          const pattern = (guild + turn) % 3;
          if (pattern === 0) {
            overlapping++;
            await Promise.all([say(guild, 'ann', turn), sleep(700).then(() => say(guild, 'bob', turn))]);
          } else {
            const [first, second] = pattern === 1 ? (['ann', 'bob'] as const) : (['bob', 'ann'] as const);
            await say(guild, first, turn);
            await sleep(4_000);
            await say(guild, second, turn);
          }
          await sleep(4_500);
        }
      }),
    );
    const talkEnded = performance.now();
    const usageTalk = await service.usage();
    const benchTalk = process.cpuUsage(benchBefore);

    // Until every turn is stored (or nothing more comes for 20 s): the conversations as the API
    // has them. Guild g's conversation is the one ann (who started the call) is in.
    const expected = guildCount * SPEAKERS.length * turnsPerSpeaker;
    const accountsByName = new Map<string, string>();
    const readAll = async () => {
      accountsByName.clear();
      let cursor: string | undefined;
      do {
        const page = await api.json('GET', `/api/v0/accounts?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
        for (const account of page.accounts as Array<{ id: string; username: string }>) accountsByName.set(account.username, account.id);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      const guildConversations: string[][] = [];
      const conversationIds = new Set<string>();
      for (let guild = 0; guild < guildCount; guild++) {
        const mine: string[] = [];
        for (const speaker of SPEAKERS) {
          const accountId = accountsByName.get(userName(guild, speaker));
          if (!accountId) continue;
          const listed = await api.json('GET', `/api/v0/conversations?accountId=${accountId}`);
          for (const conversation of listed.conversations as Array<{ id: string }>) {
            conversationIds.add(conversation.id);
            if (speaker === 'ann') mine.push(conversation.id);
          }
        }
        guildConversations.push(mine);
      }
      const conversations = new Map<string, ConversationView>();
      for (const id of conversationIds) conversations.set(id, (await api.json('GET', `/api/v0/conversations/${id}`)) as ConversationView);
      return { guildConversations, conversations };
    };
    const storedTurns = (read: Awaited<ReturnType<typeof readAll>>) => [...read.conversations.values()].flatMap((conversation) => conversation.messages.filter((message) => message.participant_type === 'account'));
    let read = await readAll();
    let lastCount = -1;
    let lastChange = performance.now();
    await until(async () => {
      read = await readAll();
      const count = storedTurns(read).length;
      if (count !== lastCount) {
        lastCount = count;
        lastChange = performance.now();
      }
      return count >= expected || performance.now() - lastChange > 20_000 ? true : undefined;
    }, 120_000, 500);
    // The last replies finish playing: no audio from the bot in any guild for a second.
    await until(() => (discord.guilds.every((guild) => voice.heard(guild.id, { since: performance.now() - 1_000 }).durationMs === 0) ? true : undefined), 30_000);
    const settled = performance.now();
    const usageSettled = await service.usage();
    read = await readAll();

    // The check: every turn once, under its speaker, in its guild's conversation.
    const found = new Map<string, number>();
    const misattributed: Array<{ turn: string; storedAs: string; inGuildConversation: boolean }> = [];
    const unreadable: string[] = [];
    for (const [conversationId, conversation] of read.conversations) {
      const names = new Map(conversation.speakers.map((speaker) => [speaker.id, speaker.name]));
      for (const message of conversation.messages.filter((message) => message.participant_type === 'account')) {
        const tag = parseTag(message.content);
        if (!tag) {
          unreadable.push(message.content);
          continue;
        }
        found.set(key(tag), (found.get(key(tag)) ?? 0) + 1);
        const storedAs = names.get(message.participant_id) ?? message.participant_id;
        const inGuildConversation = read.guildConversations[tag.guild]?.includes(conversationId) ?? false;
        if (storedAs !== userName(tag.guild, tag.speaker) || !inGuildConversation) misattributed.push({ turn: tagText(tag), storedAs, inGuildConversation });
      }
    }
    const lost: string[] = [];
    const duplicated: string[] = [];
    for (let code = 0; code < codes; code++) {
      const tag = tagOf(code, turnsPerSpeaker);
      const count = found.get(key(tag)) ?? 0;
      if (count === 0) lost.push(tagText(tag));
      if (count > 1) duplicated.push(`${tagText(tag)} ×${count}`);
    }
    // The transcription side: a turn sent twice (split by a pause) or never.
    const transcribedCounts = new Map<string, number>();
    for (const { tag } of transcribed) transcribedCounts.set(key(tag), (transcribedCounts.get(key(tag)) ?? 0) + 1);
    const margins = transcribed.map((entry) => entry.margin);
    const replies = [...read.conversations.values()].flatMap((conversation) => conversation.messages.filter((message) => message.participant_type === 'character'));

    const chatRequests = chat.requests
      .filter((request) => request.path.endsWith('/chat/completions'))
      .map((request) => {
        const last = request.body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
        return typeof last === 'string' ? last : JSON.stringify(last);
      });
    const talkSeconds = (talkEnded - talkStarted) / 1000;
    const settledSeconds = (settled - talkStarted) / 1000;
    const cpuSeconds = (from: { cpuMicros: number }, to: { cpuMicros: number }) => (to.cpuMicros - from.cpuMicros) / 1e6;
    const percent = (seconds: number, over: number) => round((seconds / over) * 100, 1);
    const result = {
      calls: guildCount,
      speakersPerCall: SPEAKERS.length,
      turnsPerSpeaker,
      turnsSpoken: expected,
      roundsOverlapping: overlapping,
      turnsAddressedToCharacter: guildCount * SPEAKERS.length * (turnsPerSpeaker - (turnsPerSpeaker >= UNNAMED_TURN ? 1 : 0)),
      speechSecondsPerTurn: { p50: round(percentile(speechSeconds, 0.5), 2), max: round(Math.max(...speechSeconds), 2) },
      talkSeconds: round(talkSeconds, 1),
      untilSettledSeconds: round(settledSeconds, 1),
      serviceCpu: {
        quietCallsPercentOfCore: percent(cpuSeconds(quietBefore, quietAfter), quietMs / 1000),
        quietPerCallPercentOfCore: round(percent(cpuSeconds(quietBefore, quietAfter), quietMs / 1000) / guildCount, 2),
        talkingPercentOfCore: percent(cpuSeconds(usageBefore, usageTalk), talkSeconds),
        talkingPerCallPercentOfCore: round(percent(cpuSeconds(usageBefore, usageTalk), talkSeconds) / guildCount, 2),
        untilSettledPercentOfCore: percent(cpuSeconds(usageBefore, usageSettled), settledSeconds),
        cpuSecondsUntilSettled: round(cpuSeconds(usageBefore, usageSettled), 2),
        cpuMsPerTurnUntilSettled: round((cpuSeconds(usageBefore, usageSettled) * 1000) / expected, 0),
        maxRssMegabytes: round(usageSettled.maxRssBytes / 1024 / 1024, 0),
      },
      benchProcessCpuPercentOfCoreWhileTalking: percent((benchTalk.user + benchTalk.system) / 1e6, talkSeconds),
      attribution: {
        stored: storedTurns(read).length,
        lost: lost.length,
        duplicated: duplicated.length,
        misattributed: misattributed.length,
        unreadable: unreadable.length,
        lostTurns: lost,
        duplicatedTurns: duplicated,
        misattributedTurns: misattributed,
        unreadableTexts: unreadable.slice(0, 5),
        conversationsPerGuild: read.guildConversations.map((ids) => ids.length),
      },
      transcription: {
        requests: transcribed.length,
        turnsSentMoreThanOnce: [...transcribedCounts.values()].filter((count) => count > 1).length,
        turnsNeverSent: codes - transcribedCounts.size,
        toneMarginMin: round(Math.min(...margins), 1),
        toneMarginP50: round(percentile(margins, 0.5), 1),
        // A turn whose tone barely wins was not read surely: its audio reached transcription damaged.
        unsureReadings: transcribed.filter((entry) => entry.margin < 10).map((entry) => ({ read: tagText(entry.tag), runnerUp: tagText(entry.runnerUp), margin: round(entry.margin, 1), seconds: round(entry.seconds, 2) })),
      },
      service: { turnsOverLogged: log.turnsOver, turnsHeardLogged: log.heard, turnFailures: log.failed, interruptions: log.interrupted, playerErrors: log.playerErrors },
      characterRepliesStored: replies.length,
      characterRepliesInterrupted: replies.filter((message) => message.finish_reason === 'interrupted').length,
      chatRequests: chatRequests.length,
      // The prompt may put several people's turns in one user message: the turn answered is its last.
      chatRequestsAnsweringUnnamedTurns: chatRequests.filter((line) => parseTag(line.split('\n').at(-1) ?? '')?.turn === UNNAMED_TURN).length,
      chatRequestsNotForATurn: chatRequests.filter((line) => !parseTag(line)).slice(0, 3),
      characterNames: [...new Set(characterNames)],
      // What the people heard of the character: every reply is the same two sentences.
      replyAudioHeardSeconds: round(discord.guilds.reduce((sum, guild) => sum + voice.heard(guild.id, { since: talkStarted }).durationMs, 0) / 1000, 1),
      replyAudioSecondsIfAllPlayedWhole: round((replies.length * replySeconds), 1),
      packetProblems: voice.connections.reduce((sum, connection) => sum + connection.problems.length, 0),
      packetProblemsSample: voice.connections.flatMap((connection) => connection.problems).slice(0, 5),
      // People's packets sent late by this process (their clients would not be): a gap over the
      // silence threshold ends a turn in the middle, which is this benchmark's fault, not the service's.
      speakerPacketsLateMs: { p50: round(percentile(senderLateMs, 0.5)), p99: round(percentile(senderLateMs, 0.99)), max: round(Math.max(...senderLateMs)), turnsOver300: senderLateMs.filter((late) => late > 300).length },
    };
    console.error('voice calls', { ...result, attribution: { ...result.attribution, lostTurns: undefined, duplicatedTurns: undefined } });
    return result;
  } finally {
    await api.close();
    await service.stop();
    await chat.close();
    await stt.close();
    await world.close();
  }
}
