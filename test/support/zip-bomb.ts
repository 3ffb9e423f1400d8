/**
 * A zip of one entry that inflates to `megabytes` MB of zeros from about 1 KB per MB, made in
 * memory. Deflating a gigabyte at test time takes 8–13 s, so one megabyte is deflated (level 9)
 * and sync-flushed, which ends it byte-aligned and not final, and that block is repeated: a
 * valid deflate stream, because its matches only reach back over zeros.
 */
import zlib from 'node:zlib';

export function zipOfZeros(megabytes: number, options: { name?: string; declareSizes?: boolean } = {}): Uint8Array {
  const { name = 'face.png', declareSizes = true } = options;
  const megabyte = Buffer.alloc(1024 * 1024);
  const block = zlib.deflateRawSync(megabyte, { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH });
  const data = Buffer.concat([...Array<Buffer>(megabytes).fill(block), zlib.deflateRawSync(Buffer.alloc(0))]);
  let crc = 0;
  for (let index = 0; index < megabytes; index += 1) crc = zlib.crc32(megabyte, crc);
  const size = megabytes * megabyte.length;
  const fileName = Buffer.from(name);
  // ZIP64 is not needed below 4 GB.
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(20, 4); // version needed
  local.writeUInt16LE(8, 8); // deflate
  if (declareSizes) {
    local.writeUInt32LE(crc >>> 0, 14);
    local.writeUInt32LE(data.length, 18);
    local.writeUInt32LE(size >>> 0, 22);
  } else {
    // As a streaming zipper writes it: sizes and CRC follow the data in a descriptor.
    local.writeUInt16LE(0x0008, 6);
  }
  const descriptor = Buffer.alloc(declareSizes ? 0 : 16);
  if (!declareSizes) {
    descriptor.writeUInt32LE(0x08074b50, 0);
    descriptor.writeUInt32LE(crc >>> 0, 4);
    descriptor.writeUInt32LE(data.length, 8);
    descriptor.writeUInt32LE(size >>> 0, 12);
  }
  local.writeUInt16LE(fileName.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  central.writeUInt16LE(20, 6);
  central.writeUInt16LE(declareSizes ? 0 : 0x0008, 8);
  central.writeUInt16LE(8, 10);
  central.writeUInt32LE(crc >>> 0, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(size >>> 0, 24);
  central.writeUInt16LE(fileName.length, 28);
  central.writeUInt32LE(0, 42); // offset of the local header
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + fileName.length, 12);
  end.writeUInt32LE(local.length + fileName.length + data.length + descriptor.length, 16);
  return new Uint8Array(Buffer.concat([local, fileName, data, descriptor, central, fileName, end]));
}
