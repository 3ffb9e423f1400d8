/**
 * The real @discordjs/voice joins a voice channel of the fake Discord and plays; the fake voice
 * server decrypts and decodes what arrives, and these tests check it the way a listener would:
 * how long, how loud, at what pitch, in what order, and that silence follows.
 */
import { once } from 'node:events';
import { AudioPlayerStatus, createAudioPlayer, type AudioPlayer, type AudioResource, type VoiceConnection } from '@discordjs/voice';
import { Events, type GatewayDispatchPayload } from 'discord.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dominantFrequency, type HeardAudio } from '../fakes/discord-voice/fake-voice.js';
import { opusToneResource, startVoiceWorld, toneResource, type VoiceWorld } from './harness.js';

/** Silence frames after the last audio frame. */
function trailingSilence(heard: HeardAudio): number {
  const lastAudio = heard.packets.findLastIndex((packet) => !packet.silence);
  return lastAudio === -1 ? 0 : heard.packets.length - lastAudio - 1;
}

/**
 * @discordjs/voice pads a resource with five silence frames but goes idle before sending the fifth:
 * four arrive after the audio, and the fifth stays prepared and leads the next resource.
 */
const TRAILING_SILENCE_FRAMES = 4;

/** Plays a resource and resolves when the player is idle again (silence padding sent). */
async function playToEnd(player: AudioPlayer, resource: AudioResource): Promise<void> {
  player.play(resource);
  await once(player, AudioPlayerStatus.Idle);
}

describe('fake Discord voice: playback', () => {
  let world: VoiceWorld;
  let connection: VoiceConnection;
  let player: AudioPlayer;
  const dispatches: string[] = [];

  beforeAll(async () => {
    world = await startVoiceWorld();
    world.client.on(Events.Raw, (packet: GatewayDispatchPayload) => {
      if (packet.t === 'VOICE_STATE_UPDATE' || packet.t === 'VOICE_SERVER_UPDATE') dispatches.push(packet.t);
    });
    connection = await world.join();
    player = createAudioPlayer();
    connection.subscribe(player);
  });
  afterAll(() => world.stop());

  it('joins: op 4, VOICE_STATE_UPDATE before VOICE_SERVER_UPDATE, then a Ready voice session with DAVE offered', () => {
    const { voice, guild, voiceChannelId, discord } = world;
    expect(voice.voiceStateRequests).toMatchObject([{ guildId: guild.id, channelId: voiceChannelId, selfDeaf: true, selfMute: false }]);
    expect(dispatches).toEqual(['VOICE_STATE_UPDATE', 'VOICE_SERVER_UPDATE']);
    expect(guild.members.me?.voice.channelId).toBe(voiceChannelId);
    expect(voice.voiceState(guild.id, discord.botUser)?.channelId).toBe(voiceChannelId);
    const [record] = voice.connections;
    expect(voice.connections).toHaveLength(1);
    expect(record).toMatchObject({ status: 'ready', mode: 'aead_aes256_gcm_rtpsize', userId: discord.botUser.id, channelId: voiceChannelId });
    // The bot left DAVE on (Discord requires it); the fake answered version 0, so Opus arrives plain.
    expect(record?.maxDaveProtocolVersion).toBeGreaterThanOrEqual(1);
    expect(record?.received.map((payload) => payload.op).slice(0, 2)).toEqual([0, 1]);
  });

  it('hears one second of a 440 Hz tone, then silence frames, with speaking on and off', async () => {
    const { voice, guild } = world;
    const since = performance.now();
    await playToEnd(player, toneResource(440, 1000));
    const heard = await voice.waitForAudio(guild.id, (audio) => trailingSilence(audio) >= TRAILING_SILENCE_FRAMES, { since });

    expect(heard.durationMs).toBeGreaterThanOrEqual(950);
    expect(heard.durationMs).toBeLessThanOrEqual(1050);
    expect(heard.segments).toHaveLength(1);
    expect(dominantFrequency(heard.segments[0]?.pcm ?? new Int16Array())).toBeCloseTo(440, -1);
    // A half-scale sine has an RMS of 0.354 of full scale; Opus keeps it within a few percent.
    expect(heard.rms).toBeGreaterThan(0.3);
    expect(heard.rms).toBeLessThan(0.4);
    // Silence frames come after the audio, never before or in between.
    const firstSilence = heard.packets.findIndex((packet) => packet.silence);
    expect(heard.packets.slice(firstSilence).every((packet) => packet.silence)).toBe(true);
    expect(heard.silenceFrames).toBe(TRAILING_SILENCE_FRAMES);
    // One continuous stream: each packet 20 ms (960 samples) of RTP time after the one before.
    const steps = heard.packets.slice(1).map((packet, index) => [packet.sequence - heard.packets[index]!.sequence, packet.timestamp - heard.packets[index]!.timestamp]);
    expect(new Set(steps.map((step) => step.join(' ')))).toEqual(new Set(['1 960']));
    // Paced, not sent in a burst: the player schedules frame k at 20·k ms after it starts, never
    // sooner, so the last frame cannot arrive before that however busy the machine is (a late
    // timer only delays frames; how evenly they come is benchmark 7's jitter, not a test's).
    const audioPackets = heard.packets.filter((packet) => !packet.silence);
    expect(audioPackets.at(-1)!.arrivedAt - since).toBeGreaterThanOrEqual((audioPackets.length - 1) * 20 - 1);

    // Speaking off travels on the WebSocket when the player goes idle, after the last UDP frame.
    const record = await voice.waitFor((state) => state.connections.find((candidate) => candidate.speaking.some((event) => event.speaking === 0)));
    expect(record.problems).toEqual([]);
    expect(new Set(heard.packets.map((packet) => packet.ssrc))).toEqual(new Set([record.ssrc]));
    expect(record.speaking.map((event) => ({ speaking: event.speaking, ssrc: event.ssrc }))).toEqual([
      { speaking: 1, ssrc: record.ssrc },
      { speaking: 0, ssrc: record.ssrc },
    ]);
  });

  it('plays two resources back to back, in order: a PCM tone, then ready-made Opus packets', async () => {
    const { voice, guild } = world;
    const since = performance.now();
    await playToEnd(player, toneResource(440, 1000));
    await playToEnd(player, opusToneResource(880, 600));
    const heard = await voice.waitForAudio(guild.id, (audio) => audio.segments.length >= 2 && trailingSilence(audio) >= TRAILING_SILENCE_FRAMES, { since });

    expect(heard.segments.map((segment) => Math.round(dominantFrequency(segment.pcm) / 10) * 10)).toEqual([440, 880]);
    expect(heard.segments[0]?.durationMs).toBeCloseTo(1000, -2);
    expect(heard.segments[1]?.durationMs).toBeCloseTo(600, -2);
    expect(heard.segments[1]?.startedAt).toBeGreaterThan(heard.segments[0]?.startedAt ?? Infinity);
    expect(voice.connections[0]?.problems).toEqual([]);
  });
});
