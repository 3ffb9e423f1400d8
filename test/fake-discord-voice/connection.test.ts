/**
 * Voice states and the life of a voice connection: test users in channels as discord.js sees them,
 * heartbeats, what @discordjs/voice 0.19 really does when its voice socket drops (resume on 4015
 * or 1006, signal again on other codes, stay Disconnected on 4014), joining again, and leaving.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AudioPlayerStatus,
  createAudioPlayer,
  entersState,
  VoiceConnectionDisconnectReason,
  VoiceConnectionStatus,
  type VoiceConnection,
  type VoiceConnectionState,
} from '@discordjs/voice';
import { ChannelType, Events, GatewayIntentBits, type VoiceState } from 'discord.js';
import { VoiceCloseCodes, VoiceOpcodes } from 'discord-api-types/voice/v8';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { loginClient } from '../fake-discord/harness.js';
import { startVoiceWorld, toneResource, type VoiceWorld } from './harness.js';
import { patient } from '../support/patience.js';

/** Statuses a connection goes through from now on (changes of status only, not of its inner state). */
function statusesOf(connection: VoiceConnection): string[] {
  const statuses: string[] = [];
  connection.on('stateChange', (old: VoiceConnectionState, next: VoiceConnectionState) => {
    if (old.status !== next.status) statuses.push(next.status);
  });
  return statuses;
}

/** Polls client-side state the fake cannot see change; the fake's own state has `waitFor`. */
async function eventually(check: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = performance.now() + patient(timeoutMs);
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`eventually: not true within ${patient(timeoutMs)} ms`);
    await sleep(10);
  }
}

/** The user ids @discordjs/voice believes share its channel (learned from ops 11 and 13). */
function connectedClients(connection: VoiceConnection): string[] {
  if (connection.state.status !== VoiceConnectionStatus.Ready) return [];
  const data: unknown = Reflect.get(connection.state.networking.state, 'connectionData');
  const clients: unknown = typeof data === 'object' && data !== null ? Reflect.get(data, 'connectedClients') : undefined;
  return clients instanceof Set ? [...(clients as Set<string>)] : [];
}

describe('fake Discord voice: states and connections', () => {
  let world: VoiceWorld;

  // Discord's own voice heartbeat (13.75 s): a short one makes the client give up its socket
  // after three unanswered beats, which a loaded machine can cause by itself mid-test.
  beforeEach(async () => void (world = await startVoiceWorld()));
  afterEach(() => world.stop());

  it('puts test users in voice channels: GUILD_CREATE and VOICE_STATE_UPDATE reach discord.js, and leaving empties the channel', async () => {
    const { discord, voice, client, guild, voiceChannelId } = world;
    const alice = discord.createUser({ username: 'alice' });
    const joined = once(client, Events.VoiceStateUpdate) as Promise<[VoiceState, VoiceState]>;
    voice.joinVoice(alice, voiceChannelId);
    const [, after] = await joined;
    expect(after.id).toBe(alice.id);
    expect(guild.members.cache.get(alice.id)?.voice.channelId).toBe(voiceChannelId);
    const channel = guild.channels.cache.get(voiceChannelId);
    expect(channel?.type).toBe(ChannelType.GuildVoice);
    expect(channel?.isVoiceBased() === true ? [...channel.members.keys()] : []).toEqual([alice.id]);

    const late = await loginClient(discord, { intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates] });
    try {
      expect(late.guilds.cache.get(guild.id)?.voiceStates.cache.get(alice.id)?.channelId).toBe(voiceChannelId);
    } finally {
      await late.destroy();
    }

    const left = once(client, Events.VoiceStateUpdate);
    voice.leaveVoice(alice, guild.id);
    await left;
    expect(guild.members.cache.get(alice.id)?.voice.channelId).toBeNull();
    expect(channel?.isVoiceBased() === true ? channel.members.size : -1).toBe(0);
    expect(voice.occupants(guild.id, voiceChannelId)).toEqual([]);
  });

  it('tells the bot who shares its channel (ops 11 and 13) and acknowledges its heartbeats', async () => {
    // A short voice heartbeat, so acknowledgements are seen without waiting Discord's 13.75 s.
    await world.stop();
    world = await startVoiceWorld({ heartbeatIntervalMs: 250 });
    const { discord, voice, guild, voiceChannelId } = world;
    const bob = discord.createUser({ username: 'bob' });
    voice.joinVoice(bob, voiceChannelId);
    const connection = await world.join();
    await eventually(() => connectedClients(connection).join() === bob.id);
    const carol = discord.createUser({ username: 'carol' });
    voice.joinVoice(carol, voiceChannelId);
    voice.leaveVoice(bob, guild.id);
    await eventually(() => connectedClients(connection).join() === carol.id);

    await voice.waitFor((state) => (state.connections[0]?.heartbeats ?? 0) >= 2, 2000);
    expect(connection.ping.ws).toBeGreaterThanOrEqual(0);
  });

  it('mid-play 4015 (voice server crashed): the library resumes the same session and the rest of the audio arrives', async () => {
    const { voice, guild } = world;
    const connection = await world.join();
    const statuses = statusesOf(connection);
    const player = createAudioPlayer();
    connection.subscribe(player);
    player.play(toneResource(440, 1500));
    await voice.waitForAudio(guild.id, (audio) => audio.durationMs >= 400);

    expect(voice.dropVoiceConnection(guild.id, { code: VoiceCloseCodes.VoiceServerCrashed })).toBe(1);
    await once(player, AudioPlayerStatus.Idle);

    expect(statuses).toEqual([VoiceConnectionStatus.Connecting, VoiceConnectionStatus.Ready]);
    expect(voice.connections).toHaveLength(1);
    const [record] = voice.connections;
    expect(record).toMatchObject({ resumes: 1, sockets: 2, closeCodes: [4015], status: 'ready' });
    expect(record?.received.filter((payload) => payload.op === VoiceOpcodes.Identify)).toHaveLength(1);
    expect(record?.received.filter((payload) => payload.op === VoiceOpcodes.Resume)).toHaveLength(1);
    // The player pauses while the socket is down and carries on afterwards: nothing is skipped.
    const heard = voice.heard(guild.id);
    expect(heard.durationMs).toBeGreaterThanOrEqual(1425);
    expect(heard.durationMs).toBeLessThanOrEqual(1575);
    expect(record?.problems).toEqual([]);
  });

  it('a socket cut without a close frame (1006) is resumed as well', async () => {
    const { voice, guild } = world;
    const connection = await world.join();
    expect(voice.dropVoiceConnection(guild.id, { abrupt: true })).toBe(1);
    await voice.waitFor((state) => state.connections[0]?.resumes === 1, 3000);
    await entersState(connection, VoiceConnectionStatus.Ready, 3000);
    expect(voice.connections[0]?.closeCodes).toEqual([1006]);
  });

  it('a final close code (4006): the library signals again with op 4 and identifies a new session by itself', async () => {
    const { voice, guild } = world;
    const connection = await world.join();
    const statuses = statusesOf(connection);
    voice.dropVoiceConnection(guild.id, { code: VoiceCloseCodes.SessionNoLongerValid });
    await voice.waitFor((state) => state.connections[1]?.status === 'ready', 3000);
    await entersState(connection, VoiceConnectionStatus.Ready, 3000);

    expect(statuses).toEqual([VoiceConnectionStatus.Signalling, VoiceConnectionStatus.Connecting, VoiceConnectionStatus.Ready]);
    expect(voice.voiceStateRequests.map((request) => request.channelId)).toEqual([world.voiceChannelId, world.voiceChannelId]);
    expect(voice.connections.map((record) => record.closeCodes)).toEqual([[4006], []]);
    expect(voice.connections[1]?.ssrc).not.toBe(voice.connections[0]?.ssrc);
  });

  it('kicked (null voice state, then 4014): Disconnected until the bot joins again, which works', async () => {
    const { voice, guild, discord } = world;
    const connection = await world.join();
    voice.kickBot(guild.id);
    await entersState(connection, VoiceConnectionStatus.Disconnected, 3000);
    expect(connection.state).toMatchObject({ reason: VoiceConnectionDisconnectReason.WebSocketClose, closeCode: 4014 });
    expect(guild.members.me?.voice.channelId).toBeNull();
    // The library leaves the decision to the bot: no op 4 of its own, even a while later.
    await sleep(300);
    expect(voice.voiceStateRequests).toHaveLength(1);
    expect(connection.state.status).toBe(VoiceConnectionStatus.Disconnected);

    const again = await world.join();
    expect(again).toBe(connection);
    expect(voice.voiceState(guild.id, discord.botUser)?.channelId).toBe(world.voiceChannelId);
    const player = createAudioPlayer();
    connection.subscribe(player);
    player.play(toneResource(440, 300));
    const heard = await voice.waitForAudio(guild.id, (audio) => audio.durationMs >= 300);
    expect(new Set(heard.packets.map((packet) => packet.connectionId))).toEqual(new Set([2]));
  });

  it('leaving sends op 4 with channel_id null; the voice state goes and the client closes its socket', async () => {
    const { voice, guild, client, discord } = world;
    const connection = await world.join();
    const left = once(client, Events.VoiceStateUpdate);
    connection.destroy();
    await left;
    expect(voice.voiceStateRequests.at(-1)).toMatchObject({ guildId: guild.id, channelId: null });
    expect(guild.members.me?.voice.channelId).toBeNull();
    expect(voice.voiceState(guild.id, discord.botUser)).toBeUndefined();
    await voice.waitFor((state) => state.connections[0]?.status === 'closed', 2000);
    expect(voice.connections[0]?.closeCodes).toEqual([1000]);
  });

  it('refuses an identify with the wrong token (4004), as Discord does', async () => {
    const { voice, guild, discord } = world;
    await world.join();
    const socket = new WebSocket(`wss://${voice.endpoint}?v=8`);
    await once(socket, 'open');
    const session = voice.connections[0]?.sessionId;
    socket.send(JSON.stringify({ op: VoiceOpcodes.Identify, d: { server_id: guild.id, user_id: discord.botUser.id, session_id: session, token: 'wrong' } }));
    const [code] = (await once(socket, 'close')) as [number];
    expect(code).toBe(VoiceCloseCodes.AuthenticationFailed);
  });
});
