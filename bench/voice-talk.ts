import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { deployCommands } from '../src/bot/deploy-commands.js';
import { startFakeDiscord } from '../test/fakes/discord/fake-discord.js';
import { startFakeVoice } from '../test/fakes/discord-voice/fake-voice.js';
import { type FakeRequestBody, startFakeOpenAI } from '../test/fakes/fake-openai.js';
import { startFakeTranscription } from '../test/fakes/stt/fake-transcription.js';
import { startServiceProcess } from './processes.js';
import { percentile, round } from './stats.js';

const STORY = 'Once there was a lighthouse on a rock. Its keeper counted every ship that passed in the night. One winter a ship came that had no lights at all. The keeper rang the bell again and again until dawn.';
/** A client sends five silence frames, 20 ms apart, after the last voiced one. */
const TRAILING_SILENCE_MS = 100;

/**
 * Issue 23: /voice talk through the service as `npm start` runs it. A person's speech is sent
 * in real time by the fake voice server; timed are the end of their speech (their last voiced
 * packet) to the first audible packet of the reply, with engines that answer at once and with
 * typical delays (transcription 300 ms, first token 300 ms; speech is espeak's own), and a
 * barge-in: from the interrupting speech passing the 500 ms threshold to the reply's last packet.
 */
export async function benchmarkVoiceTalk(dataDir: string) {
  await mkdir(dataDir, { recursive: true });
  const discord = await startFakeDiscord({ recordRequests: false });
  const voice = await startFakeVoice(discord, { trust: false });
  const stt = await startFakeTranscription();
  let firstTokenDelayMs = 0;
  const llm = await startFakeOpenAI({
    recordRequests: false,
    script: (body: FakeRequestBody) => {
      const last = body.messages?.filter((message) => message.role === 'user').at(-1)?.content;
      const story = typeof last === 'string' && last.includes('story');
      return { reply: story ? STORY : 'Aye, that it is.', tokensPerSecond: 400, firstTokenDelayMs };
    },
  });
  const certificateDirectory = await mkdtemp(path.join(os.tmpdir(), 'likeness-voice-ca-'));
  const certificate = path.join(certificateDirectory, 'fake-voice.pem');
  await writeFile(certificate, voice.certificatePem);
  await deployCommands({ token: discord.token, apiBase: discord.apiBase });
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    DISCORD_TOKEN: discord.token,
    DISCORD_API_BASE: discord.apiBase,
    DISCORD_COMMANDS_PER_MINUTE: '1000',
    LLM_BASE_URL: llm.baseURL,
    LLM_MODEL: 'fake-model',
    STT_ENGINE: 'openai',
    STT_BASE_URL: stt.apiURL,
    // The start-up waits for the bot's ready line, logged at info.
    LOG_LEVEL: 'info',
    NODE_EXTRA_CA_CERTS: certificate,
  });
  try {
    const guild = discord.guild;
    const guildId = guild.id;
    const person = discord.createUser({ username: 'caller' });
    const run = async (name: string, options: Record<string, string>, subcommand: string, expected: string) => {
      const sent = discord.sendSlashCommand({ user: person, channelId: guild.textChannelId, name, options, subcommand });
      await sent.response;
      await discord.waitFor(() => JSON.stringify(discord.interactionResponses(sent.interactionId)).includes(expected), 20_000);
    };
    await run('character', { preset: 'en-us+m3' }, 'voice', 'now speaks');
    voice.joinVoice(person, guild.voiceChannelId!);
    await voice.waitFor(() => voice.occupants(guildId, guild.voiceChannelId!).includes(person.id));
    await run('voice', {}, 'talk', 'is listening');
    /** Resolves once the bot has gone quiet after speaking (its last packet a silence frame). */
    const quiet = (since: number) => voice.waitForAudio(guildId, (audio) => audio.durationMs > 0 && audio.packets.at(-1)?.silence === true, { since, timeoutMs: 20_000 });

    const turnToReply = async (turns: number): Promise<number[]> => {
      const latencies: number[] = [];
      for (let turn = 0; turn < turns; turn++) {
        stt.script = { text: `Is the tide coming in, number ${turn}?` };
        const spoken = await voice.speak(person, { text: `Is the tide coming in, number ${turn}?` }, { pace: 'realtime' });
        const lastVoiced = spoken.talk.at(-1)!.lastPacketAt - TRAILING_SILENCE_MS;
        const heard = await quiet(lastVoiced);
        latencies.push(heard.packets.find((packet) => !packet.silence)!.arrivedAt - lastVoiced);
      }
      return latencies;
    };
    await turnToReply(1);
    const instant = await turnToReply(10);
    stt.script = { delayMs: 300 };
    firstTokenDelayMs = 300;
    const delayed = (await turnToReply(10)).map((value) => value);
    firstTokenDelayMs = 0;

    const interruption = 'Stop, stop, that is quite enough of that story now.';
    // espeak starts with a little quiet: the threshold counts from the first sound.
    const interruptionPcm = await voice.synthesize(interruption);
    const leadMs = (Math.max(0, interruptionPcm.samples.findIndex((sample) => Math.abs(sample) > 300)) * 1000) / interruptionPcm.sampleRate;
    const bargeIns: number[] = [];
    for (let attempt = 0; attempt < 8; attempt++) {
      stt.script = { text: 'Tell me a story.' };
      const asked = await voice.speak(person, { text: 'Tell me a story.' }, { pace: 'realtime' });
      await voice.waitForAudio(guildId, (audio) => audio.durationMs >= 1500, { since: asked.talk.at(-1)!.lastPacketAt, timeoutMs: 20_000 });
      stt.script = { text: 'Stop there.' };
      const interrupting = await voice.speak(person, { text: interruption }, { pace: 'realtime' });
      const thresholdAt = interrupting.talk[0]!.firstPacketAt + leadMs + 500;
      const storyPackets = voice.heard(guildId, { since: asked.talk.at(-1)!.lastPacketAt }).packets.filter((packet) => !packet.silence && packet.arrivedAt < interrupting.talk.at(-1)!.lastPacketAt);
      bargeIns.push(storyPackets.at(-1)!.arrivedAt - thresholdAt);
      await quiet(interrupting.talk.at(-1)!.lastPacketAt);
    }

    const result = {
      turnEndToFirstReplyPacketP50Ms: round(percentile(instant, 0.5), 0),
      turnEndToFirstReplyPacketP99Ms: round(percentile(instant, 0.99), 0),
      withTypicalEngineDelaysP50Ms: round(percentile(delayed, 0.5), 0),
      withTypicalEngineDelaysP99Ms: round(percentile(delayed, 0.99), 0),
      bargeInToLastReplyPacketP50Ms: round(percentile(bargeIns, 0.5), 0),
      bargeInToLastReplyPacketP99Ms: round(percentile(bargeIns, 0.99), 0),
      targets: 'p50 ≤ silence threshold (600) + 250 ms with instant engines; ≤ 1500 ms with typical delays; barge-in p99 ≤ 60 ms',
    };
    console.error('voice talk', result);
    return result;
  } finally {
    await service.stop();
    await llm.close();
    await stt.close();
    await voice.close();
    await discord.close();
    await rm(certificateDirectory, { recursive: true, force: true });
  }
}
