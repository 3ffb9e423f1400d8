/**
 * What the fake voice server saw of each voice connection, and `hear`, which turns the RTP packets
 * of a guild into what a listener in the channel would have heard. A record is one voice session:
 * it starts at identify and survives resumes, so packets sent across a resume stay in one stream.
 */
import { concatenateSamples, FRAME_SAMPLES, OpusFrameDecoder, rootMeanSquare, SAMPLE_RATE, CHANNELS } from './audio-analysis.js';
import { decryptAes256GcmRtpSize, OPUS_PAYLOAD_TYPE, SILENCE_FRAME, type RtpHeader } from './rtp.js';

/** How long a plain frame after encrypted ones waits for the op 31 that would explain it. */
const PLAIN_FRAME_GRACE_MS = 100;

/** One RTP packet that decrypted and decoded. Times are `performance.now()` milliseconds. */
export interface HeardPacket {
  connectionId: number;
  arrivedAt: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  /** The AEAD nonce counter the client appended; it must grow with every packet. */
  counter: number;
  /** The Opus frame, decrypted (end-to-end too when `endToEnd`). */
  opus: Buffer;
  /** Whether the frame came end-to-end encrypted (DAVE), decrypted as the other members of the call would. */
  endToEnd: boolean;
  /** Whether the frame was @discordjs/voice's silence frame `f8 ff fe`. */
  silence: boolean;
  /** Decoded 48 kHz stereo samples, interleaved (1,920 for a 20 ms frame). */
  pcm: Int16Array;
}

/** An op 5 Speaking from the client. */
export interface SpeakingEvent {
  at: number;
  speaking: number;
  delay: number;
  ssrc: number;
}

/** A voice session as the fake saw it, from identify on; read-only for tests. */
export interface VoiceConnectionRecord {
  readonly id: number;
  readonly guildId: string;
  readonly userId: string;
  readonly channelId: string;
  /** The gateway session id the client identified with. */
  readonly sessionId: string;
  readonly ssrc: number;
  /** Identify's `max_dave_protocol_version`: > 0 means the client left DAVE on. */
  readonly maxDaveProtocolVersion: number | null;
  /** The DAVE protocol version the fake answered in the session description (0: DAVE off). */
  readonly daveProtocolVersion: number;
  /** DAVE frames from the bot no one could decrypt because no other member was in the group to hear them. */
  readonly unheardEndToEndFrames: number;
  /** `identified` → `ready` (session description sent) → `closed`, and back to `ready` on resume. */
  readonly status: 'identified' | 'ready' | 'closed';
  /** Chosen in op 1 Select Protocol. */
  readonly mode: string | null;
  readonly clientAddress: { address: string; port: number } | null;
  readonly secretKey: Buffer | null;
  /** WebSockets this session has used: one, plus one per resume. */
  readonly sockets: number;
  readonly resumes: number;
  readonly heartbeats: number;
  /** Close code of each of its WebSockets, whichever side closed (1006: no close frame). */
  readonly closeCodes: readonly number[];
  readonly speaking: readonly SpeakingEvent[];
  readonly packets: readonly HeardPacket[];
  readonly keepalives: number;
  /** Protocol slips (bad header, sequence gap, failed decryption, …); empty when the client behaved. */
  readonly problems: readonly string[];
  /** Every JSON payload the client sent, in order. */
  readonly received: ReadonlyArray<{ at: number; op: number; d: unknown }>;
}

/** The mutable record behind `VoiceConnectionRecord`; only the voice server writes to it. */
export class ConnectionRecording implements VoiceConnectionRecord {
  status: VoiceConnectionRecord['status'] = 'identified';
  mode: string | null = null;
  clientAddress: { address: string; port: number } | null = null;
  secretKey: Buffer | null = null;
  sockets = 1;
  resumes = 0;
  heartbeats = 0;
  keepalives = 0;
  readonly closeCodes: number[] = [];
  readonly speaking: SpeakingEvent[] = [];
  readonly packets: HeardPacket[] = [];
  readonly problems: string[] = [];
  readonly received: Array<{ at: number; op: number; d: unknown }> = [];
  daveProtocolVersion = 0;
  unheardEndToEndFrames = 0;
  /**
   * Decrypts a DAVE frame as the call's other members would: the frame, a reason it failed, or
   * null when no member is there to try. Null while the session has no DAVE.
   */
  endToEnd: ((frame: Buffer) => Buffer | string | null) | null = null;
  /** Set by the first DAVE frame: a client that has keys never goes back to plain audio unless told to start over. */
  #encrypting = false;
  #restartedAt = -Infinity;
  /** A plain frame after encrypted ones, judged once the op 31 the client may have sent just before it had time to arrive. */
  #suspect: NodeJS.Timeout | undefined;
  readonly #decoder = new OpusFrameDecoder();

  constructor(
    readonly id: number,
    readonly guildId: string,
    readonly userId: string,
    readonly channelId: string,
    readonly sessionId: string,
    readonly ssrc: number,
    readonly maxDaveProtocolVersion: number | null,
  ) {}

  /** Checks, decrypts, decodes and keeps one RTP packet; slips go to `problems`. */
  receive(packet: Buffer, header: RtpHeader, remote: { address: string; port: number }, arrivedAt: number): void {
    const problem = (text: string): void => void this.problems.push(`packet ${this.packets.length}: ${text}`);
    if (this.secretKey === null || this.mode === null) return problem('RTP before the session description');
    if (remote.address !== this.clientAddress?.address || remote.port !== this.clientAddress.port) {
      problem(`came from ${remote.address}:${remote.port}, not the address given in Select Protocol`);
    }
    // @discordjs/voice sends plain headers: version 2, no padding, extension or CSRCs; payload type 120.
    if (header.firstByte !== 0x80) problem(`first header byte 0x${header.firstByte.toString(16)}, expected 0x80`);
    if (header.payloadType !== OPUS_PAYLOAD_TYPE) problem(`payload type ${header.payloadType}, expected ${OPUS_PAYLOAD_TYPE}`);
    const decrypted = decryptAes256GcmRtpSize(packet, header, this.secretKey);
    if (typeof decrypted === 'string') return problem(decrypted);
    const previous = this.packets.at(-1);
    if (previous !== undefined) {
      if (header.sequence !== (previous.sequence + 1) % 2 ** 16) problem(`sequence ${header.sequence} after ${previous.sequence}`);
      if (header.timestamp !== (previous.timestamp + FRAME_SAMPLES) % 2 ** 32) problem(`timestamp ${header.timestamp} after ${previous.timestamp}`);
      // The counter is a nonce: it must never repeat, but a packet prepared and not sent (a resume
      // mid-play) legitimately skips one, so only a counter that fails to grow is a slip.
      if (decrypted.counter <= previous.counter) problem(`nonce counter ${decrypted.counter} reused after ${previous.counter}`);
    }
    const frame = this.#endToEndDecrypted(decrypted.opus, problem);
    if (frame === null) return;
    const pcm = this.#decoder.decode(frame.opus);
    if (typeof pcm === 'string') return problem(pcm);
    this.packets.push({
      connectionId: this.id,
      arrivedAt,
      sequence: header.sequence,
      timestamp: header.timestamp,
      ssrc: header.ssrc,
      counter: decrypted.counter,
      opus: frame.opus,
      endToEnd: frame.endToEnd,
      silence: frame.opus.equals(SILENCE_FRAME),
      pcm,
    });
  }

  /** The client was told to start a new DAVE group or flagged its own (op 24 with epoch 1, op 31): plain frames are expected again. */
  restartEndToEnd(): void {
    this.#encrypting = false;
    this.#restartedAt = performance.now();
  }

  /** The Opus frame behind DAVE: marked frames (`FA FA` at the end) are decrypted, plain ones checked for being allowed. */
  #endToEndDecrypted(opus: Buffer, problem: (text: string) => void): { opus: Buffer; endToEnd: boolean } | null {
    // Without DAVE every frame is Opus as sent, and one in a few thousand ends in FA FA by chance.
    if (this.endToEnd === null) return { opus, endToEnd: false };
    if (!isEndToEndFrame(opus)) {
      if (this.#encrypting && !opus.equals(SILENCE_FRAME) && this.#suspect === undefined) this.#suspectPlainFrame(problem);
      return { opus, endToEnd: false };
    }
    this.#encrypting = true;
    const clear = this.endToEnd(opus);
    if (clear === null) return void (this.unheardEndToEndFrames += 1), null;
    if (typeof clear === 'string') return problem(clear), null;
    return { opus: clear, endToEnd: true };
  }

  close(): void {
    clearTimeout(this.#suspect);
    this.#decoder.close();
  }

  /**
   * A client says op 31 over its WebSocket and sends its next, plain, frame over UDP a moment
   * later; the datagram can still be read first. The frame is a slip only if no restart follows.
   */
  #suspectPlainFrame(problem: (text: string) => void): void {
    const arrivedAt = performance.now();
    this.#suspect = setTimeout(() => {
      this.#suspect = undefined;
      if (this.#restartedAt < arrivedAt) problem('plain Opus frame after end-to-end encrypted ones');
    }, PLAIN_FRAME_GRACE_MS).unref();
  }
}

/** DAVE's protocol frame check, as far as a listener needs it: the `FA FA` magic marker closes the frame. */
export function isEndToEndFrame(frame: Buffer): boolean {
  return frame.length > 2 && frame[frame.length - 1] === 0xfa && frame[frame.length - 2] === 0xfa;
}

/** A run of audio frames between silence frames (or the ends of the recording). */
export interface HeardSegment {
  packets: HeardPacket[];
  pcm: Int16Array;
  durationMs: number;
  startedAt: number;
}

/** What a listener heard from the bot in a guild, across all its voice connections there. */
export interface HeardAudio {
  packets: HeardPacket[];
  /** Every frame's samples in arrival order, silence frames included: 48 kHz stereo, interleaved. */
  pcm: Int16Array;
  /** Length of the frames that were not silence frames. */
  durationMs: number;
  /** Loudness of the non-silence frames, 0–1 of full scale. */
  rms: number;
  silenceFrames: number;
  /** `performance.now()` of the first packet, or null. */
  firstPacketAt: number | null;
  /** The non-silence runs in order: two resources played back to back are two segments. */
  segments: HeardSegment[];
}

/** Builds `HeardAudio` from connection records; `since` (performance.now() ms) skips earlier packets. */
export function hear(records: readonly VoiceConnectionRecord[], since = -Infinity): HeardAudio {
  const packets = records.flatMap((record) => record.packets.filter((packet) => packet.arrivedAt >= since));
  packets.sort((left, right) => left.arrivedAt - right.arrivedAt);
  const segments: HeardSegment[] = [];
  let current: HeardPacket[] = [];
  const finish = (): void => {
    const first = current[0];
    if (first !== undefined) segments.push({ packets: current, pcm: concatenateSamples(current.map((packet) => packet.pcm)), durationMs: durationOf(current), startedAt: first.arrivedAt });
    current = [];
  };
  for (const packet of packets) {
    if (packet.silence) finish();
    else current.push(packet);
  }
  finish();
  const audio = packets.filter((packet) => !packet.silence);
  return {
    packets,
    pcm: concatenateSamples(packets.map((packet) => packet.pcm)),
    durationMs: durationOf(audio),
    rms: rootMeanSquare(concatenateSamples(audio.map((packet) => packet.pcm))),
    silenceFrames: packets.length - audio.length,
    firstPacketAt: packets[0]?.arrivedAt ?? null,
    segments,
  };
}

function durationOf(packets: readonly HeardPacket[]): number {
  let samples = 0;
  for (const packet of packets) samples += packet.pcm.length / CHANNELS;
  return (samples / SAMPLE_RATE) * 1000;
}
