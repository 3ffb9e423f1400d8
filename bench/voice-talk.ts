/**
 * Issue 23: /voice talk through the service as `npm start` runs it, against the fake Discord and
 * its voice server (a person speaking espeak in real time, op 5, encrypted RTP, five silence
 * frames), the fake transcription server, the fake chat engine and a speech engine. Per turn:
 * the end of the person's speech (their last audio packet) to the first audible packet of the
 * reply, with each stage stamped on the way (the fakes stamp what reaches them; the service's own
 * log lines, whose pino `time` reads the same clock, give when it detected the turn's end and
 * stored its words); then barge-in, from the first packet of speech over the character to the
 * last audible packet of the character, and from the service's log of the threshold passing.
 *
 * The fakes share this process with the fake Discord; the service runs in its own.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_TURN_OPTIONS } from '../src/audio/turn-detector.js';
import type { PcmAudio } from '../src/core/ports.js';
import type { SpokenSpeech } from '../test/fakes/discord-voice/fake-voice.js';
import { type FakeChatScript, type FakeRequestBody, startFakeOpenAI, tokensOf } from '../test/fakes/fake-openai.js';
import { startFakeOpenAISpeech } from '../test/fakes/speech/fake-openai-speech.js';
import { startFakeTranscription } from '../test/fakes/stt/fake-transcription.js';
import { type ServiceLogEntry, startServiceProcess } from './processes.js';
import { percentile, round } from './stats.js';
import { startVoiceWorld } from './voice-world.js';

export interface VoiceTalkScenario {
  name: string;
  transcriptionDelayMs: number;
  firstTokenDelayMs: number;
  /** Pace of the reply's words after the first; absent: all at once. */
  tokensPerSecond?: number;
  /** Absent: espeak in the service (the default engine). Set: the fake OpenAI speech server, waiting this long before its first audio. */
  firstAudioDelayMs?: number;
}

const FRAME_MS = 20;
/** Two sentences: the first is spoken while the second is still coming. */
const REPLY = 'Aye, I hear you well. The harbour is quiet tonight.';
const STORY =
  'Once there was a lighthouse on a rock. Its keeper counted every ship that passed in the night. One winter a ship came that had no lights at all. The keeper rang the bell again and again until dawn. Nobody ever learned where that ship had sailed from.';
const QUESTIONS = ['Where is the boat tonight?', 'Is the lighthouse lit?', 'What did the keeper see?', 'How cold is the water?', 'Who rang the bell?'];
const INTERRUPTION = 'Stop, stop, that is quite enough of that story now.';

/** A sentence is handed to speech once the word after it arrives (or the reply ends): that word's position. */
function firstSentenceReadyToken(reply: string): number {
  const tokens = tokensOf({}, { reply });
  const end = tokens.findIndex((token) => /[.!?]\s*$/.test(token));
  return Math.min(end + 1, tokens.length - 1);
}

interface Stamps {
  /** From the service's log: a turn's end detected, its words stored, playback stopped by barge-in. */
  turnOver: number[];
  turnHeard: number[];
  interrupted: number[];
  /** performance.now() of each transcription request read, and answered. */
  transcriptionReceived: number[];
  transcriptionAnswered: number[];
  chatReceived: number[];
  /** Per chat request (same order): when its first token, and the token completing its first sentence, were written. */
  firstToken: number[];
  firstSentenceReady: number[];
  speechReceived: number[];
}

/** The last audio packet (not a silence frame) of a stretch of talk sent in real time. */
function lastAudioPacketAt(spoken: SpokenSpeech): number {
  const talk = spoken.talk[0]!;
  return talk.firstPacketAt + (talk.opus.length - 1) * FRAME_MS;
}

/** `pcm` from its first to its last sound (a sample louder than 300 of 32,767). */
function withoutQuiet(pcm: PcmAudio): PcmAudio {
  const loud = (sample: number) => Math.abs(sample) > 300;
  const first = pcm.samples.findIndex(loud);
  const last = pcm.samples.findLastIndex(loud);
  return { sampleRate: pcm.sampleRate, samples: first === -1 ? pcm.samples : pcm.samples.slice(first, last + 1) };
}

const after = (times: readonly number[], since: number) => times.find((time) => time >= since);

function summary(samples: readonly number[]) {
  const defined = samples.filter((sample) => Number.isFinite(sample));
  return { p50: round(percentile(defined, 0.5), 0), p99: round(percentile(defined, 0.99), 0), min: round(Math.min(...defined), 0), max: round(Math.max(...defined), 0) };
}

export async function benchmarkVoiceTalkScenario(dataDir: string, scenario: VoiceTalkScenario, counts: { turns: number; bargeIns: number }) {
  await mkdir(dataDir, { recursive: true });
  const stamps: Stamps = { turnOver: [], turnHeard: [], interrupted: [], transcriptionReceived: [], transcriptionAnswered: [], chatReceived: [], firstToken: [], firstSentenceReady: [], speechReceived: [] };
  const world = await startVoiceWorld(1);
  const { discord, voice } = world;

  let nextWords: string[] = [];
  const stt = await startFakeTranscription();
  stt.script = {
    delayMs: scenario.transcriptionDelayMs,
    hear: () => {
      const now = performance.now();
      stamps.transcriptionAnswered.push(now);
      stamps.transcriptionReceived.push(stt.loopback.requests.at(-1)?.receivedAt ?? now - scenario.transcriptionDelayMs);
      return nextWords.shift() ?? 'Something else.';
    },
  };
  const readyToken = new Map<FakeRequestBody, number>();
  const tokensWritten = new Map<FakeRequestBody, number>();
  const chat = await startFakeOpenAI({
    recordRequests: true,
    script: (body): FakeChatScript => {
      const last = body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
      const reply = typeof last === 'string' && last.includes('story') ? STORY : REPLY;
      readyToken.set(body, firstSentenceReadyToken(reply));
      return { reply, firstTokenDelayMs: scenario.firstTokenDelayMs, ...(scenario.tokensPerSecond ? { tokensPerSecond: reply === STORY ? 15 : scenario.tokensPerSecond } : {}) };
    },
    onChunkWritten: (event) => {
      if (event.kind !== 'token' || !event.request.path.endsWith('/chat/completions')) return;
      const written = (tokensWritten.get(event.request.body) ?? 0) + 1;
      tokensWritten.set(event.request.body, written);
      if (written === 1) stamps.firstToken.push(event.writtenAt);
      if (written === (readyToken.get(event.request.body) ?? 0) + 1) stamps.firstSentenceReady.push(event.writtenAt);
    },
  });
  const speechServer = scenario.firstAudioDelayMs === undefined ? undefined : await startFakeOpenAISpeech();
  if (speechServer) speechServer.script = { firstAudioDelayMs: scenario.firstAudioDelayMs };
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    ...world.serviceEnvironment,
    LLM_BASE_URL: chat.baseURL,
    LLM_MODEL: 'fake-model',
    STT_ENGINE: 'openai',
    STT_BASE_URL: stt.apiURL,
    ...(speechServer ? { TTS_ENGINE: 'openai', TTS_BASE_URL: speechServer.apiURL } : {}),
    // The turn's end is logged at debug.
    LOG_LEVEL: 'debug',
  }, (entry: ServiceLogEntry) => {
    // pino's time is Date.now(); both processes read the same clock.
    const at = (entry.time ?? Number.NaN) - performance.timeOrigin;
    if (entry.msg === 'voice turn over') stamps.turnOver.push(at);
    if (entry.msg === 'voice turn heard') stamps.turnHeard.push(at);
    if (entry.msg === 'interrupted by a person talking') stamps.interrupted.push(at);
  });
  try {
    const guild = discord.guilds[0]!;
    const user = discord.createUser({ username: 'caller', guildIds: [guild.id] });
    const run = async (name: string, options: Record<string, string>, subcommand: string, expected: string) => {
      const sent = discord.sendSlashCommand({ user, channelId: guild.textChannelId, name, options, subcommand });
      await sent.response;
      await discord.waitFor(() => JSON.stringify(discord.interactionResponses(sent.interactionId)).includes(expected), 20_000);
    };
    await run('character', { preset: speechServer ? 'alloy' : 'en-us+m3' }, 'voice', 'now speaks');
    voice.joinVoice(user, guild.voiceChannelId!);
    await voice.waitFor(() => voice.occupants(guild.id, guild.voiceChannelId!).includes(user.id));
    await run('voice', {}, 'talk', 'is listening');

    const speechReceived = () => (speechServer ? speechServer.requests.map((request) => request.receivedAt) : []);
    /** Waits until the reply that began after `since` has been played to the end (every sentence, then silence). */
    const replyPlayed = (since: number, sentences: number) =>
      voice.waitForAudio(guild.id, (audio) => audio.segments.length >= sentences && audio.packets.slice(-4).every((packet) => packet.silence), { since, timeoutMs: 30_000 });

    const turns: Array<Record<string, number | undefined>> = [];
    const usageBefore = await service.usage();
    const turnsStarted = performance.now();
    // Each question without the quiet espeak puts after it, so its last packet is its last sound
    // (a Discord client's voice gate stops a little after it): the end of speech is not counted late.
    const questions = new Map<string, PcmAudio>();
    for (const words of QUESTIONS) questions.set(words, withoutQuiet(await voice.synthesize(words)));
    voice.encodeAhead([...questions.values()]);
    for (let index = 0; index < counts.turns + 1; index++) {
      const words = QUESTIONS[index % QUESTIONS.length]!;
      nextWords = [words];
      const spoken = await voice.speak(user, questions.get(words)!, { pace: 'realtime' });
      const speechEnd = lastAudioPacketAt(spoken);
      const heard = await replyPlayed(speechEnd, 2);
      const firstAudible = heard.packets.find((packet) => !packet.silence)!.arrivedAt;
      const relative = (time: number | undefined) => (time === undefined ? undefined : round(time - speechEnd, 1));
      // The first turn also loads the speech engine and the conversation: warm-up, not counted.
      if (index > 0)
        turns.push({
          turnOver: relative(after(stamps.turnOver, speechEnd)),
          transcriptionReceived: relative(after(stamps.transcriptionReceived, speechEnd)),
          transcriptionAnswered: relative(after(stamps.transcriptionAnswered, speechEnd)),
          turnHeard: relative(after(stamps.turnHeard, speechEnd)),
          chatReceived: relative(after(chat.requests.map((request) => request.receivedAt), speechEnd)),
          firstToken: relative(after(stamps.firstToken, speechEnd)),
          firstSentenceReady: relative(after(stamps.firstSentenceReady, speechEnd)),
          speechReceived: relative(after(speechReceived(), speechEnd)),
          firstAudible: relative(firstAudible),
        });
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const turnsSeconds = (performance.now() - turnsStarted) / 1000;
    const usageAfter = await service.usage();

    // Barge-in: the person talks over a long story once a second of it has been heard.
    const bargeIns: Array<Record<string, number | undefined>> = [];
    for (let index = 0; index < counts.bargeIns; index++) {
      nextWords = ['Tell me a story.'];
      const asked = await voice.speak(user, { text: 'Tell me a story.' }, { pace: 'realtime' });
      await voice.waitForAudio(guild.id, (audio) => audio.durationMs >= 1000, { since: lastAudioPacketAt(asked), timeoutMs: 30_000 });
      nextWords = ['Stop, that is enough.'];
      const interrupting = await voice.speak(user, { text: INTERRUPTION }, { pace: 'realtime' });
      const speechEnd = lastAudioPacketAt(interrupting);
      const firstPacket = interrupting.talk[0]!.firstPacketAt;
      // The answer to the interruption (a turn of its own) cannot start before its silence threshold.
      await replyPlayed(speechEnd, 2);
      const story = voice.heard(guild.id, { since: lastAudioPacketAt(asked) }).packets.filter((packet) => !packet.silence && packet.arrivedAt < speechEnd + 300);
      const lastStoryPacket = story.at(-1)!.arrivedAt;
      const thresholdPassed = after(stamps.interrupted, firstPacket);
      bargeIns.push({
        firstPacketToStop: round(lastStoryPacket - firstPacket, 1),
        firstPacketToThreshold: thresholdPassed === undefined ? undefined : round(thresholdPassed - firstPacket, 1),
        thresholdToStop: thresholdPassed === undefined ? undefined : round(lastStoryPacket - thresholdPassed, 1),
        storyHeardMs: story.length * FRAME_MS,
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
    }

    const column = (rows: Array<Record<string, number | undefined>>, key: string) => rows.map((row) => row[key] ?? Number.NaN);
    const stages = ['turnOver', 'transcriptionReceived', 'transcriptionAnswered', 'turnHeard', 'chatReceived', 'firstToken', 'firstSentenceReady', 'speechReceived', 'firstAudible'];
    const breakdownP50 = Object.fromEntries(stages.filter((stage) => turns.some((turn) => turn[stage] !== undefined)).map((stage) => [stage, round(percentile(column(turns, stage).filter(Number.isFinite), 0.5), 0)]));
    const result = {
      scenario: scenario.name,
      engines: { ...scenario, speech: speechServer ? 'fake OpenAI speech (chirps)' : 'espeak (in the service)' },
      turns: turns.length,
      speechEndToFirstAudibleMs: summary(column(turns, 'firstAudible')),
      breakdownP50MsAfterSpeechEnd: breakdownP50,
      silenceThresholdMs: DEFAULT_TURN_OPTIONS.silenceMs,
      bargeIns: bargeIns.length,
      bargeInFirstPacketToLastAudibleMs: summary(column(bargeIns, 'firstPacketToStop')),
      bargeInFirstPacketToThresholdMs: summary(column(bargeIns, 'firstPacketToThreshold')),
      bargeInThresholdToLastAudibleMs: summary(column(bargeIns, 'thresholdToStop')),
      bargeInThresholdMs: DEFAULT_TURN_OPTIONS.bargeInMs,
      serviceCpuPercentDuringTurns: round(((usageAfter.cpuMicros - usageBefore.cpuMicros) / 1e6 / turnsSeconds) * 100, 1),
      packetProblems: voice.connections.reduce((sum, connection) => sum + connection.problems.length, 0),
      perTurn: turns,
      perBargeIn: bargeIns,
    };
    console.error('voice talk', scenario.name, { ...result, perTurn: undefined, perBargeIn: undefined });
    return result;
  } finally {
    await service.stop();
    await speechServer?.close();
    await chat.close();
    await stt.close();
    await world.close();
  }
}

/** Both scenarios of issue 23's benchmark: engines that answer at once, and engines with typical delays. */
export async function benchmarkVoiceTalk(dataDir: string) {
  const counts = { turns: Number(process.env.BENCH_VOICE_TURNS ?? 20), bargeIns: Number(process.env.BENCH_VOICE_BARGE_INS ?? 8) };
  const immediate = await benchmarkVoiceTalkScenario(path.join(dataDir, 'immediate'), { name: 'engines answering at once', transcriptionDelayMs: 0, firstTokenDelayMs: 0 }, counts);
  const delayed = await benchmarkVoiceTalkScenario(
    path.join(dataDir, 'delayed'),
    { name: 'typical engine delays', transcriptionDelayMs: 300, firstTokenDelayMs: 300, tokensPerSecond: 40, firstAudioDelayMs: 200 },
    counts,
  );
  return {
    immediate,
    delayed,
    targets: {
      immediate: `p50 ≤ silence threshold + 250 ms = ${DEFAULT_TURN_OPTIONS.silenceMs + 250} ms`,
      immediateMet: immediate.speechEndToFirstAudibleMs.p50 <= DEFAULT_TURN_OPTIONS.silenceMs + 250,
      delayed: 'p50 ≤ 1,500 ms',
      delayedMet: delayed.speechEndToFirstAudibleMs.p50 <= 1500,
      bargeIn: 'threshold passed → last audible packet p99 ≤ 60 ms (issue 23)',
      bargeInMet: Math.max(immediate.bargeInThresholdToLastAudibleMs.p99, delayed.bargeInThresholdToLastAudibleMs.p99) <= 60,
    },
  };
}
