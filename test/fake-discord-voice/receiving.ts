/**
 * Helpers for tests of what the bot receives: a receive stream's frames gathered until it ends,
 * the raw datagrams seen on the bot's own UDP socket, decoding, and mono tones as `PcmAudio`.
 */
import { VoiceConnectionStatus, type AudioReceiveStream, type VoiceConnection } from '@discordjs/voice';
import type { PcmAudio } from '../../src/core/ports.js';
import { concatenateSamples, OpusFrameDecoder } from '../fakes/discord-voice/audio-analysis.js';
import { decryptAes256GcmRtpSize, parseRtpHeader, SILENCE_FRAME, type RtpHeader } from '../fakes/discord-voice/rtp.js';

/** Every frame a receive stream yielded, with arrival times, once it has ended. */
export interface ReceivedStream {
  frames: Buffer[];
  arrivals: number[];
  /** `performance.now()` when the stream ended. */
  endedAt: number;
}

/** Gathers a receive stream until it ends (AfterSilence / AfterInactivity) or fails. */
export function collect(stream: AudioReceiveStream): Promise<ReceivedStream> {
  const received: ReceivedStream = { frames: [], arrivals: [], endedAt: 0 };
  stream.on('data', (frame: Buffer) => {
    received.frames.push(frame);
    received.arrivals.push(performance.now());
  });
  return new Promise((resolve, reject) => {
    stream.once('end', () => resolve({ ...received, endedAt: performance.now() }));
    stream.once('error', reject);
  });
}

/** The frames that are not the silence frame `F8 FF FE`. */
export function audioFrames(frames: readonly Buffer[]): Buffer[] {
  return frames.filter((frame) => !frame.equals(SILENCE_FRAME));
}

/** Decodes one user's frames in order, as a bot keeps one decoder per user; 48 kHz stereo. */
export function decode(frames: readonly Buffer[]): Int16Array {
  const decoder = new OpusFrameDecoder();
  try {
    return concatenateSamples(
      frames.map((frame) => {
        const pcm = decoder.decode(frame);
        if (typeof pcm === 'string') throw new Error(pcm);
        return pcm;
      }),
    );
  } finally {
    decoder.close();
  }
}

/** Milliseconds of 48 kHz stereo samples. */
export const stereoMs = (samples: Int16Array): number => samples.length / 2 / 48;

/** A datagram seen on the bot's UDP socket, decrypted with the session's key. */
export interface WirePacket {
  at: number;
  header: RtpHeader;
  /** The decrypted payload after the extension body: Opus, then any padding. */
  payload: Buffer;
  counter: number;
}

/** Listens on the bot's own UDP socket (the library's VoiceUDPSocket emits every datagram). */
export function tapUdp(connection: VoiceConnection, secretKey: Buffer): { packets: WirePacket[]; problems: string[] } {
  const tap = { packets: [] as WirePacket[], problems: [] as string[] };
  if (connection.state.status !== VoiceConnectionStatus.Ready) throw new Error('tapUdp: the connection is not Ready');
  const networking = connection.state.networking.state;
  if (!('udp' in networking)) throw new Error('tapUdp: no UDP socket yet');
  networking.udp.on('message', (datagram: Buffer) => {
    if (datagram.length <= 8) return;
    const header = parseRtpHeader(datagram);
    if (typeof header === 'string') return void tap.problems.push(header);
    const decrypted = decryptAes256GcmRtpSize(datagram, header, secretKey);
    if (typeof decrypted === 'string') return void tap.problems.push(decrypted);
    tap.packets.push({ at: performance.now(), header, payload: decrypted.opus, counter: decrypted.counter });
  });
  return tap;
}

/** A mono sine tone at 48 kHz, half scale. */
export function monoTone(frequency: number, durationMs: number): PcmAudio {
  const samples = new Int16Array(Math.round(48 * durationMs));
  for (let index = 0; index < samples.length; index += 1) samples[index] = Math.round(Math.sin((2 * Math.PI * frequency * index) / 48_000) * 16_383);
  return { sampleRate: 48_000, samples };
}
