/**
 * An Ogg Opus file (RFC 7845 over RFC 3533) from Opus packets: the `OpusHead` page, the
 * `OpusTags` page, then audio pages with granule positions and CRCs. No maintained npm package
 * writes Ogg (prism-media only reads it; the others are abandoned or native), and the format is
 * small enough to write here and prove against prism-media's demuxer.
 */

/** Ogg Opus granule positions always count 48 kHz samples, whatever the input rate. */
export const OGG_OPUS_GRANULE_RATE = 48_000;
/** libopus's encoder delay at 48 kHz (`OPUS_GET_LOOKAHEAD`: 2.5 ms + 4 ms), which players skip. */
export const OPUS_PRE_SKIP = 312;

export interface OggOpusOptions {
  /** 1 (mono) or 2; Discord voice messages are mono. */
  channels: number;
  /** The rate of the audio before encoding; informational, for players that resample back. */
  inputSampleRate: number;
  /** 48 kHz samples in each packet (960 for 20 ms frames). */
  samplesPerPacket: number;
  /** 48 kHz samples of real audio; the padding of the last frame past it is trimmed by the last granule. */
  totalSamples: number;
  /** Default `OPUS_PRE_SKIP`. */
  preSkip?: number;
  /** The stream's serial number; random when absent. */
  serial?: number;
  vendor?: string;
}

/** About one second of 20 ms packets per page, well below the 255 lacing values a page can hold. */
const PACKETS_PER_PAGE = 50;
const FLAG_BEGINNING = 0x02;
const FLAG_END = 0x04;

export function muxOggOpus(packets: readonly Uint8Array[], options: OggOpusOptions): Uint8Array {
  const preSkip = options.preSkip ?? OPUS_PRE_SKIP;
  const serial = options.serial ?? Math.floor(Math.random() * 0x1_0000_0000);
  const pages: Uint8Array[] = [];
  let sequence = 0;
  const page = (content: readonly Uint8Array[], granule: bigint, flags: number) => pages.push(oggPage(content, { granule, serial, sequence: sequence++, flags }));

  page([opusHead(options.channels, preSkip, options.inputSampleRate)], 0n, FLAG_BEGINNING);
  page([opusTags(options.vendor ?? 'likeness')], 0n, 0);
  const end = BigInt(preSkip + options.totalSamples);
  if (packets.length === 0) {
    page([], end, FLAG_END);
  }
  for (let start = 0; start < packets.length; start += PACKETS_PER_PAGE) {
    const content = packets.slice(start, start + PACKETS_PER_PAGE);
    const last = start + PACKETS_PER_PAGE >= packets.length;
    const decoded = BigInt(preSkip + (start + content.length) * options.samplesPerPacket);
    // The last page's granule may end before its packets do: that is how the padding is trimmed.
    page(content, last ? (end < decoded ? end : decoded) : decoded, last ? FLAG_END : 0);
  }
  return Buffer.concat(pages);
}

function opusHead(channels: number, preSkip: number, inputSampleRate: number): Uint8Array {
  const head = Buffer.alloc(19);
  head.write('OpusHead', 0, 'latin1');
  head.writeUInt8(1, 8); // version
  head.writeUInt8(channels, 9);
  head.writeUInt16LE(preSkip, 10);
  head.writeUInt32LE(inputSampleRate, 12);
  head.writeInt16LE(0, 16); // output gain
  head.writeUInt8(0, 18); // channel mapping family 0: mono or stereo, no table
  return head;
}

function opusTags(vendor: string): Uint8Array {
  const vendorBytes = Buffer.from(vendor, 'utf8');
  const tags = Buffer.alloc(8 + 4 + vendorBytes.length + 4);
  tags.write('OpusTags', 0, 'latin1');
  tags.writeUInt32LE(vendorBytes.length, 8);
  vendorBytes.copy(tags, 12);
  tags.writeUInt32LE(0, 12 + vendorBytes.length); // no user comments
  return tags;
}

interface PageHeader {
  granule: bigint;
  serial: number;
  sequence: number;
  flags: number;
}

/** One page holding whole packets; each packet is laced as 255-byte runs and a shorter (maybe 0) one. */
function oggPage(packets: readonly Uint8Array[], header: PageHeader): Uint8Array {
  const lacing: number[] = [];
  for (const packet of packets) {
    let remaining = packet.length;
    while (remaining >= 255) {
      lacing.push(255);
      remaining -= 255;
    }
    lacing.push(remaining);
  }
  if (lacing.length > 255) throw new RangeError(`an Ogg page holds at most 255 lacing values, not ${lacing.length}`);
  const bodyLength = packets.reduce((sum, packet) => sum + packet.length, 0);
  const page = Buffer.alloc(27 + lacing.length + bodyLength);
  page.write('OggS', 0, 'latin1');
  page.writeUInt8(0, 4); // stream structure version
  page.writeUInt8(header.flags, 5);
  page.writeBigUInt64LE(header.granule, 6);
  page.writeUInt32LE(header.serial >>> 0, 14);
  page.writeUInt32LE(header.sequence, 18);
  page.writeUInt32LE(0, 22); // CRC, computed below over the page with this field zero
  page.writeUInt8(lacing.length, 26);
  page.set(lacing, 27);
  let offset = 27 + lacing.length;
  for (const packet of packets) {
    page.set(packet, offset);
    offset += packet.length;
  }
  page.writeUInt32LE(oggCrc(page), 22);
  return page;
}

/** Ogg's CRC-32: polynomial 0x04C11DB7, not reflected, initial 0, no final xor. */
const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let index = 0; index < 256; index += 1) {
    let value = index << 24;
    for (let bit = 0; bit < 8; bit += 1) value = value & 0x8000_0000 ? (value << 1) ^ 0x04c1_1db7 : value << 1;
    table[index] = value >>> 0;
  }
  return table;
})();

export function oggCrc(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) ^ (CRC_TABLE[((crc >>> 24) ^ byte) & 0xff] ?? 0)) >>> 0;
  return crc;
}
