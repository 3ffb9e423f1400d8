/**
 * The TLS presentation language as MLS uses it (RFC 9420 §2.1): big-endian integers, and
 * variable-length vectors `<V>` whose length is a QUIC-style varint (1, 2 or 4 bytes, the top two
 * bits saying which, the shortest form required). Enough of it to write the voice server's MLS
 * messages and to read what clients send.
 */

/** Builds a message from big-endian fields and `<V>` vectors. */
export class TlsWriter {
  readonly #parts: Buffer[] = [];

  uint8(value: number): this {
    this.#parts.push(Buffer.from([value]));
    return this;
  }

  uint16(value: number): this {
    const bytes = Buffer.alloc(2);
    bytes.writeUInt16BE(value);
    this.#parts.push(bytes);
    return this;
  }

  uint32(value: number): this {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE(value);
    this.#parts.push(bytes);
    return this;
  }

  uint64(value: bigint): this {
    const bytes = Buffer.alloc(8);
    bytes.writeBigUInt64BE(value);
    this.#parts.push(bytes);
    return this;
  }

  /** Bytes as they are, no length. */
  raw(bytes: Uint8Array): this {
    this.#parts.push(Buffer.from(bytes));
    return this;
  }

  /** `opaque x<V>`: a varint length, then the bytes. */
  vector(bytes: Uint8Array): this {
    this.#parts.push(varint(bytes.length), Buffer.from(bytes));
    return this;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.#parts);
  }
}

/** The MLS varint: the shortest of 1 (< 64), 2 (< 2^14) or 4 (< 2^30) bytes. */
export function varint(value: number): Buffer {
  if (value < 0x40) return Buffer.from([value]);
  if (value < 0x4000) return Buffer.from([0x40 | (value >> 8), value & 0xff]);
  if (value < 0x40000000) {
    const bytes = Buffer.alloc(4);
    bytes.writeUInt32BE((0x80000000 | value) >>> 0);
    return bytes;
  }
  throw new RangeError(`MLS varint: ${value} is too long for a vector`);
}

/** Thrown when bytes do not parse; the voice server turns it into a rejected message. */
export class TlsDecodeError extends Error {
  override readonly name = 'TlsDecodeError';
}

/** Reads big-endian fields and `<V>` vectors from a buffer, failing on anything cut short or malformed. */
export class TlsReader {
  #offset = 0;

  constructor(readonly bytes: Buffer) {}

  get offset(): number {
    return this.#offset;
  }

  get done(): boolean {
    return this.#offset === this.bytes.length;
  }

  uint8(): number {
    return this.#take(1).readUInt8();
  }

  uint16(): number {
    return this.#take(2).readUInt16BE();
  }

  uint32(): number {
    return this.#take(4).readUInt32BE();
  }

  uint64(): bigint {
    return this.#take(8).readBigUInt64BE();
  }

  /** `opaque x<V>`. */
  vector(): Buffer {
    return this.#take(this.#length());
  }

  /** A `<V>` vector of items, each read by `item` from a reader over the vector's bytes alone. */
  vectorOf<T>(item: (reader: TlsReader) => T): T[] {
    const inner = new TlsReader(this.vector());
    const items: T[] = [];
    while (!inner.done) items.push(item(inner));
    return items;
  }

  /** The bytes between `start` and where the reader is now. */
  since(start: number): Buffer {
    return this.bytes.subarray(start, this.#offset);
  }

  /** The rest, unread. */
  rest(): Buffer {
    return this.#take(this.bytes.length - this.#offset);
  }

  #length(): number {
    const first = this.uint8();
    const prefix = first >> 6;
    if (prefix === 0) return first & 0x3f;
    if (prefix === 1) {
      const value = ((first & 0x3f) << 8) | this.uint8();
      if (value < 0x40) throw new TlsDecodeError('MLS varint not in its shortest form');
      return value;
    }
    if (prefix === 2) {
      const value = ((first & 0x3f) * 2 ** 24) + this.#take(3).readUIntBE(0, 3);
      if (value < 0x4000) throw new TlsDecodeError('MLS varint not in its shortest form');
      return value;
    }
    throw new TlsDecodeError('MLS varint with the reserved 0b11 prefix');
  }

  #take(length: number): Buffer {
    if (this.#offset + length > this.bytes.length) throw new TlsDecodeError(`needs ${length} bytes at ${this.#offset} of ${this.bytes.length}`);
    const slice = this.bytes.subarray(this.#offset, this.#offset + length);
    this.#offset += length;
    return slice;
  }
}
