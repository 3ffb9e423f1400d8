/**
 * A minimal POSIX ustar writer, enough for the fake trainer's `trained_model.tar`: regular
 * files only, names under 100 bytes, fixed owner and time, so the same files give the same
 * bytes.
 */
const BLOCK = 512;

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`;
}

function header(name: string, size: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, 'utf8');
  block.write(octal(0o644, 8), 100, 'ascii');
  block.write(octal(0, 8), 108, 'ascii');
  block.write(octal(0, 8), 116, 'ascii');
  block.write(octal(size, 12), 124, 'ascii');
  block.write(octal(1_700_000_000, 12), 136, 'ascii');
  block.write('        ', 148, 'ascii');
  block.write('0', 156, 'ascii');
  block.write('ustar\0', 257, 'ascii');
  block.write('00', 263, 'ascii');
  block.write('root', 265, 'ascii');
  block.write('root', 297, 'ascii');
  let checksum = 0;
  for (const byte of block) checksum += byte;
  block.write(`${checksum.toString(8).padStart(6, '0')}\0 `, 148, 'ascii');
  return block;
}

export function ustar(files: ReadonlyArray<{ name: string; data: Uint8Array }>): Buffer {
  const parts: Buffer[] = [];
  for (const file of files) {
    if (Buffer.byteLength(file.name) >= 100) throw new RangeError(`tar name too long: ${file.name}`);
    parts.push(header(file.name, file.data.byteLength), Buffer.from(file.data));
    const padding = (BLOCK - (file.data.byteLength % BLOCK)) % BLOCK;
    parts.push(Buffer.alloc(padding));
  }
  parts.push(Buffer.alloc(BLOCK * 2));
  return Buffer.concat(parts);
}

/** The names of the files in a ustar archive, in order. */
export function ustarNames(archive: Uint8Array): string[] {
  const bytes = Buffer.from(archive);
  const names: string[] = [];
  for (let offset = 0; offset + BLOCK <= bytes.length; ) {
    const name = bytes.toString('utf8', offset, offset + 100).replace(/\0.*$/s, '');
    if (name === '') break;
    const size = parseInt(bytes.toString('ascii', offset + 124, offset + 136).replace(/\0.*$/s, ''), 8);
    names.push(name);
    offset += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
  }
  return names;
}
