import { mkdir } from 'node:fs/promises';
import { encodeMp3 } from '../src/audio/mp3.js';
import { durationMs } from '../src/audio/pcm.js';
import { createEspeakSpeechEngine } from '../src/engines/speech/espeak.js';
import { startServiceProcess } from './processes.js';
import { megabytes, percentile, round } from './stats.js';
import { startVoiceWorld } from './voice-world.js';

const voiceId = 'en-us+f3';
const passage =
  'The lighthouse keeper climbed the stairs each evening. He lit the lamp and watched the ships. Some nights the fog came in from the sea, and he rang the bell until morning. ';

/** Issue 4, part 1: espeak synthesis plus mp3 encoding, in seconds of audio per second of CPU. */
export async function benchmarkSpeechSynthesis() {
  const engine = createEspeakSpeechEngine();
  try {
    await engine.synthesize({ text: 'Warm up.', voiceId });
    const text = passage.repeat(6);
    const before = process.cpuUsage();
    const started = performance.now();
    const pcm = await engine.synthesize({ text, voiceId });
    const mp3 = encodeMp3(pcm);
    const cpu = process.cpuUsage(before);
    const audioSeconds = durationMs(pcm) / 1000;
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    const result = {
      voiceId,
      characters: text.length,
      audioSeconds: round(audioSeconds, 1),
      mp3Bytes: mp3.byteLength,
      wallSeconds: round((performance.now() - started) / 1000, 2),
      cpuSeconds: round(cpuSeconds, 2),
      audioSecondsPerCpuSecond: round(audioSeconds / cpuSeconds, 1),
    };
    console.error('speech synthesis', result);
    return result;
  } finally {
    await engine.close();
  }
}

/**
 * Issue 4, parts 2 and 3: `/speak` to the first RTP packet at the fake voice server, and ten
 * guilds playing at once (frame pacing jitter, CPU per stream), through the service as
 * `npm start` runs it with DISCORD_TOKEN and espeak.
 */
export async function benchmarkVoice(dataDir: string) {
  await mkdir(dataDir, { recursive: true });
  const guildCount = 10;
  const world = await startVoiceWorld(guildCount);
  const { discord, voice } = world;
  const service = await startServiceProcess({
    PORT: '0',
    DATA_DIR: dataDir,
    ...world.serviceEnvironment,
    LLM_BASE_URL: 'http://127.0.0.1:9/v1',
    LOG_LEVEL: 'info',
  });
  try {
    const users = discord.guilds.map((guild, index) => discord.createUser({ username: `voice${index}`, guildIds: [guild.id] }));
    const run = async (index: number, name: string, options: Record<string, string>, subcommand?: string) => {
      const guild = discord.guilds[index]!;
      const sent = discord.sendSlashCommand({ user: users[index]!, channelId: guild.textChannelId, name, options, ...(subcommand ? { subcommand } : {}) });
      await sent.response;
      return sent;
    };
    for (let index = 0; index < guildCount; index++) {
      const sent = await run(index, 'character', { preset: voiceId }, 'voice');
      await discord.waitFor(() => JSON.stringify(discord.interactionResponses(sent.interactionId)).includes('now speaks'), 20_000);
      voice.joinVoice(users[index]!, discord.guilds[index]!.voiceChannelId!);
    }

    // /speak → first packet, one guild, one request at a time (the first one also joins).
    const firstPacket: number[] = [];
    const guild0 = discord.guilds[0]!.id;
    for (let attempt = 0; attempt < 12; attempt++) {
      const since = performance.now();
      await run(0, 'speak', { text: `Attempt ${attempt}: the bell rang over the harbour.` });
      const heard = await voice.waitForAudio(guild0, (audio) => audio.durationMs > 0 && audio.silenceFrames >= 4, { since, timeoutMs: 30_000 });
      // The first packet of speech: a silence frame left over from the last request may come first.
      firstPacket.push(heard.packets.find((packet) => !packet.silence)!.arrivedAt - since);
    }

    // Ten guilds at once, each speaking the passage (about 35 s of audio).
    const before = await service.usage();
    const since = performance.now();
    await Promise.all(discord.guilds.map((_, index) => run(index, 'speak', { text: passage.repeat(3) })));
    // Checked once a second from the packet records alone: rebuilding the heard PCM (megabytes
    // per guild) would block this process, which also receives the UDP, and skew the very
    // arrival times being measured.
    const finished = (guildId: string) => {
      const packets = voice.connections.filter((connection) => connection.guildId === guildId).flatMap((connection) => connection.packets.filter((packet) => packet.arrivedAt >= since));
      const speech = packets.filter((packet) => !packet.silence).length;
      const trailingSilence = packets.slice(-4).every((packet) => packet.silence);
      return speech * 20 > 20_000 && trailingSilence && packets.length >= 4;
    };
    const done = () => discord.guilds.filter((guild) => finished(guild.id)).length;
    for (let waited = 0; done() < guildCount; waited += 1000) {
      if (waited > 120_000) throw new Error(`only ${done()} of ${guildCount} guilds finished speaking`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const heard = discord.guilds.map((guild) => voice.heard(guild.id, { since }));
    const seconds = (performance.now() - since) / 1000;
    const after = await service.usage();
    const problems = voice.connections.reduce((sum, connection) => sum + connection.problems.length, 0);
    const gaps = heard.flatMap((audio) => {
      const packets = audio.packets.filter((packet) => !packet.silence);
      return packets.slice(1).map((packet, index) => Math.abs(packet.arrivedAt - packets[index]!.arrivedAt - 20));
    });
    const audioSeconds = heard.reduce((sum, audio) => sum + audio.durationMs / 1000, 0);
    const result = {
      speakToFirstPacketP50Ms: round(percentile(firstPacket.slice(1), 0.5), 0),
      speakToFirstPacketP99Ms: round(percentile(firstPacket.slice(1), 0.99), 0),
      speakToFirstPacketWithJoinMs: round(firstPacket[0]!, 0),
      guilds: guildCount,
      audioSecondsPerGuild: round(audioSeconds / guildCount, 1),
      framePacingJitterP50Ms: round(percentile(gaps, 0.5), 2),
      framePacingJitterP99Ms: round(percentile(gaps, 0.99), 2),
      packetProblems: problems,
      serviceCpuPercentPerStream: round(((after.cpuMicros - before.cpuMicros) / 1e6 / seconds / guildCount) * 100, 1),
      servicePeakRssMB: megabytes(after.maxRssBytes),
      target: '/speak to first packet p50 < 800 ms',
    };
    console.error('voice', result);
    return result;
  } finally {
    await service.stop();
    await world.close();
  }
}
