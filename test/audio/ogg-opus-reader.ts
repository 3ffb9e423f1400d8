/**
 * Reading an Ogg Opus file back as a player would, independently of our muxer: prism-media's
 * demuxer (what @discordjs/voice plays Ogg with) and opusscript's decoder.
 */
import { Readable } from 'node:stream';
import OpusScript from 'opusscript';
import prism from 'prism-media';

/** The packets, head and tags of an Ogg Opus file. */
export async function demux(file: Uint8Array): Promise<{ head: Buffer; tags: Buffer; packets: Buffer[] }> {
  const demuxer = new prism.opus.OggDemuxer();
  let head: Buffer = Buffer.alloc(0);
  let tags: Buffer = Buffer.alloc(0);
  demuxer.on('head', (segment: Buffer) => (head = segment));
  demuxer.on('tags', (segment: Buffer) => (tags = segment));
  const packets: Buffer[] = [];
  // Fed in small chunks, so pages split across reads are read as a player would.
  const chunks = Array.from({ length: Math.ceil(file.length / 1000) }, (_, index) => Buffer.from(file.subarray(index * 1000, (index + 1) * 1000)));
  for await (const packet of Readable.from(chunks).pipe(demuxer)) packets.push(packet as Buffer);
  return { head, tags, packets };
}

/** Mono 48 kHz samples of the packets, decoded one after another (the pre-skip included). */
export function decode(packets: readonly Buffer[]): Int16Array {
  const decoder = new OpusScript(48_000, 1);
  try {
    const parts = packets.map((packet) => {
      const bytes = decoder.decode(packet);
      return Int16Array.from({ length: bytes.length / 2 }, (_, index) => bytes.readInt16LE(index * 2));
    });
    const joined = new Int16Array(parts.reduce((sum, part) => sum + part.length, 0));
    let offset = 0;
    for (const part of parts) {
      joined.set(part, offset);
      offset += part.length;
    }
    return joined;
  } finally {
    decoder.delete();
  }
}

export function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / Math.max(1, samples.length));
}
