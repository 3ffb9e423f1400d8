/**
 * The UDP side of Discord voice as bytes: IP discovery, the 8-byte keepalive, RTP headers and the
 * `aead_aes256_gcm_rtpsize` encryption @discordjs/voice prefers, both ways. Pure functions, so a malformed
 * packet shows up as a returned reason a test can read, never as a crash inside the fake.
 */
import { createCipheriv, createDecipheriv } from 'node:crypto';

/** The Opus frame @discordjs/voice sends after a resource ends or on pause: 20 ms of silence. */
export const SILENCE_FRAME = Buffer.from([0xf8, 0xff, 0xfe]);
/** Discord's dynamic RTP payload type for Opus. */
export const OPUS_PAYLOAD_TYPE = 0x78;
/** IP discovery request and response length, header included. */
const DISCOVERY_LENGTH = 74;
const TAG_LENGTH = 16;
const COUNTER_LENGTH = 4;

/** The SSRC of an IP discovery request (type 1, length 70), or null when `packet` is something else. */
export function discoveryRequestSsrc(packet: Buffer): number | null {
  if (packet.length !== DISCOVERY_LENGTH || packet.readUInt16BE(0) !== 1 || packet.readUInt16BE(2) !== 70) return null;
  return packet.readUInt32BE(4);
}

/** The answer Discord gives: type 2, length 70, SSRC, the address as a NUL-terminated string, the port last. */
export function discoveryResponse(ssrc: number, address: string, port: number): Buffer {
  const packet = Buffer.alloc(DISCOVERY_LENGTH);
  packet.writeUInt16BE(2, 0);
  packet.writeUInt16BE(70, 2);
  packet.writeUInt32BE(ssrc, 4);
  packet.write(address, 8, 'utf8');
  packet.writeUInt16BE(port, DISCOVERY_LENGTH - 2);
  return packet;
}

/** @discordjs/voice's keepalive: a u32 counter (little-endian) and four zero bytes, every 5 s. */
export function isKeepalive(packet: Buffer): boolean {
  return packet.length === 8;
}

/** A parsed RTP header; `headerLength` covers CSRCs and the extension preamble (the part left in clear). */
export interface RtpHeader {
  firstByte: number;
  payloadType: number;
  sequence: number;
  timestamp: number;
  ssrc: number;
  headerLength: number;
  /** 32-bit words of header extension, which the rtpsize modes encrypt with the payload. */
  extensionWords: number;
}

/** The header of an RTP packet, or a reason it is not one. */
export function parseRtpHeader(packet: Buffer): RtpHeader | string {
  if (packet.length < 12) return `${packet.length}-byte packet is too short for RTP`;
  const firstByte = packet[0] ?? 0;
  if (firstByte >> 6 !== 2) return `RTP version ${firstByte >> 6}, expected 2`;
  const csrcCount = firstByte & 0x0f;
  const hasExtension = (firstByte & 0x10) !== 0;
  let headerLength = 12 + 4 * csrcCount;
  let extensionWords = 0;
  if (hasExtension) {
    if (packet.length < headerLength + 4) return 'RTP extension preamble is cut short';
    extensionWords = packet.readUInt16BE(headerLength + 2);
    headerLength += 4;
  }
  return {
    firstByte,
    payloadType: (packet[1] ?? 0) & 0x7f,
    sequence: packet.readUInt16BE(2),
    timestamp: packet.readUInt32BE(4),
    ssrc: packet.readUInt32BE(8),
    headerLength,
    extensionWords,
  };
}

/** What decryption gives: the Opus frame and the nonce counter the client appended. */
export interface DecryptedPayload {
  opus: Buffer;
  counter: number;
}

/**
 * `aead_aes256_gcm_rtpsize`: packet = header | ciphertext | 16-byte tag | 4-byte counter; the IV is
 * the counter (big-endian) then 8 zero bytes; the clear header is the additional data. Returns a
 * reason instead when the tag does not verify, which is what a wrong key or mangled header gives.
 */
export function decryptAes256GcmRtpSize(packet: Buffer, header: RtpHeader, secretKey: Buffer): DecryptedPayload | string {
  const cipherEnd = packet.length - TAG_LENGTH - COUNTER_LENGTH;
  if (cipherEnd < header.headerLength) return `${packet.length}-byte packet has no room for tag and counter`;
  const counter = packet.readUInt32BE(packet.length - COUNTER_LENGTH);
  const iv = Buffer.alloc(12);
  iv.writeUInt32BE(counter, 0);
  try {
    const decipher = createDecipheriv('aes-256-gcm', secretKey, iv);
    decipher.setAAD(packet.subarray(0, header.headerLength));
    decipher.setAuthTag(packet.subarray(cipherEnd, cipherEnd + TAG_LENGTH));
    const clear = Buffer.concat([decipher.update(packet.subarray(header.headerLength, cipherEnd)), decipher.final()]);
    // The extension body, when there is one, was encrypted with the payload; the Opus frame follows it.
    return { opus: clear.subarray(header.extensionWords * 4), counter };
  } catch {
    return `AES-256-GCM tag check failed (counter ${counter})`;
  }
}

/** What a Discord client puts around one Opus frame it sends. */
export interface OutgoingRtp {
  sequence: number;
  timestamp: number;
  ssrc: number;
  opus: Buffer;
  /** Bytes of RTP padding, count byte included (0: none); clients pad at speech boundaries. */
  padding: number;
  /** One-byte-form extension elements (RFC 8285), sent by clients on every packet; null for none. */
  extension: Buffer | null;
  /** The AEAD nonce counter; must never repeat under one key. */
  counter: number;
}

/**
 * A packet as Discord relays a client's audio under `aead_aes256_gcm_rtpsize`: the 12-byte header
 * and the `BE DE` extension preamble stay clear (they are the additional data); the extension
 * body, the Opus frame and the padding are encrypted; then the tag and the 4-byte counter.
 */
export function encryptAes256GcmRtpSize(rtp: OutgoingRtp, secretKey: Buffer): Buffer {
  const extensionBody = rtp.extension === null ? Buffer.alloc(0) : padToWords(rtp.extension);
  const header = Buffer.alloc(rtp.extension === null ? 12 : 16);
  header[0] = 0x80 | (rtp.padding > 0 ? 0x20 : 0) | (rtp.extension === null ? 0 : 0x10);
  header[1] = OPUS_PAYLOAD_TYPE;
  header.writeUInt16BE(rtp.sequence % 2 ** 16, 2);
  header.writeUInt32BE(rtp.timestamp % 2 ** 32, 4);
  header.writeUInt32BE(rtp.ssrc, 8);
  if (rtp.extension !== null) {
    header.writeUInt16BE(0xbede, 12);
    header.writeUInt16BE(extensionBody.length / 4, 14);
  }
  // RFC 3550 padding: zeros, then a last byte counting all the padding bytes, itself included.
  const padding = Buffer.alloc(rtp.padding);
  if (rtp.padding > 0) padding[rtp.padding - 1] = rtp.padding;
  const iv = Buffer.alloc(12);
  iv.writeUInt32BE(rtp.counter % 2 ** 32, 0);
  const cipher = createCipheriv('aes-256-gcm', secretKey, iv);
  cipher.setAAD(header);
  const encrypted = Buffer.concat([cipher.update(Buffer.concat([extensionBody, rtp.opus, padding])), cipher.final()]);
  const counter = Buffer.alloc(COUNTER_LENGTH);
  counter.writeUInt32BE(rtp.counter % 2 ** 32, 0);
  return Buffer.concat([header, encrypted, cipher.getAuthTag(), counter]);
}

/** Extension bodies are whole 32-bit words; element padding is zero bytes (RFC 8285). */
function padToWords(body: Buffer): Buffer {
  const length = Math.ceil(body.length / 4) * 4;
  return length === body.length ? body : Buffer.concat([body, Buffer.alloc(length - body.length)]);
}
