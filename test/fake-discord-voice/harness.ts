/**
 * A fake Discord with voice, a real discord.js Client with the GuildVoiceStates intent, and audio
 * made in memory: PCM tones (encoded by @discordjs/voice through prism-media and opusscript) and
 * ready-made Opus packets, so no test needs FFmpeg or a file.
 */
import { Readable } from 'node:stream';
import {
  createAudioResource,
  entersState,
  joinVoiceChannel,
  StreamType,
  VoiceConnectionStatus,
  type AudioResource,
  type VoiceConnection,
} from '@discordjs/voice';
import { GatewayIntentBits, type Client, type Guild } from 'discord.js';
import OpusScript from 'opusscript';
import { startFakeDiscord, type FakeDiscord } from '../fakes/discord/fake-discord.js';
import { startFakeVoice, type FakeVoice, type StartFakeVoiceOptions } from '../fakes/discord-voice/fake-voice.js';
import { loginClient } from '../fake-discord/harness.js';

const SAMPLE_RATE = 48_000;
const FRAME_SAMPLES = 960;

/** Everything a voice test needs. */
export interface VoiceWorld {
  discord: FakeDiscord;
  voice: FakeVoice;
  client: Client;
  guild: Guild;
  voiceChannelId: string;
  /** Joins the voice channel as a bot would (deafened unless told otherwise, the library's default) and waits for Ready. */
  join(options?: { selfDeaf?: boolean }): Promise<VoiceConnection>;
  stop(): Promise<void>;
}

/** Starts the fakes and logs a client in; `stop` destroys any voice connection left open. */
export async function startVoiceWorld(options: StartFakeVoiceOptions = {}): Promise<VoiceWorld> {
  const discord = await startFakeDiscord();
  const voice = await startFakeVoice(discord, options);
  // Without GuildVoiceStates Discord sends no VOICE_STATE_UPDATE, and @discordjs/voice stays in Signalling.
  const client = await loginClient(discord, { intents: [GatewayIntentBits.Guilds, GatewayIntentBits.GuildVoiceStates] });
  const guild = client.guilds.cache.get(discord.guild.id);
  const voiceChannelId = discord.guild.voiceChannelId;
  if (guild === undefined || voiceChannelId === null) throw new Error('voice harness: the fake guild has no voice channel');
  const connections = new Set<VoiceConnection>();
  return {
    discord,
    voice,
    client,
    guild,
    voiceChannelId,
    async join(options = {}) {
      const connection = joinVoiceChannel({ guildId: guild.id, channelId: voiceChannelId, adapterCreator: guild.voiceAdapterCreator, ...options });
      connections.add(connection);
      return entersState(connection, VoiceConnectionStatus.Ready, 5000);
    },
    async stop() {
      for (const connection of connections) if (connection.state.status !== VoiceConnectionStatus.Destroyed) connection.destroy();
      await client.destroy();
      await voice.close();
      await discord.close();
    },
  };
}

/** s16le 48 kHz stereo PCM of a sine tone, the same on both channels. */
export function tonePcm(frequency: number, durationMs: number, amplitude = 0.5): Buffer {
  const frames = Math.round((SAMPLE_RATE * durationMs) / 1000);
  const pcm = Buffer.alloc(frames * 4);
  for (let frame = 0; frame < frames; frame += 1) {
    const sample = Math.round(Math.sin((2 * Math.PI * frequency * frame) / SAMPLE_RATE) * amplitude * 32_767);
    pcm.writeInt16LE(sample, frame * 4);
    pcm.writeInt16LE(sample, frame * 4 + 2);
  }
  return pcm;
}

/** A tone as a raw PCM resource; @discordjs/voice encodes it to Opus itself. */
export function toneResource(frequency: number, durationMs: number): AudioResource {
  return createAudioResource(Readable.from([tonePcm(frequency, durationMs)]), { inputType: StreamType.Raw });
}

/** A tone as an object-mode stream of 20 ms Opus packets, encoded here with opusscript. */
export function opusToneResource(frequency: number, durationMs: number): AudioResource {
  const encoder = new OpusScript(SAMPLE_RATE, 2, OpusScript.Application.AUDIO);
  const pcm = tonePcm(frequency, durationMs);
  const packets: Buffer[] = [];
  const frameBytes = FRAME_SAMPLES * 4;
  for (let offset = 0; offset + frameBytes <= pcm.length; offset += frameBytes) packets.push(encoder.encode(pcm.subarray(offset, offset + frameBytes), FRAME_SAMPLES));
  encoder.delete();
  return createAudioResource(Readable.from(packets), { inputType: StreamType.Opus });
}
