/**
 * A look at a model file's header before llama.cpp is given it. node-llama-cpp's own reader
 * takes an unknown version for version 3 and then reads lengths out of garbage: a file that
 * only starts like a GGUF kept it busy for good instead of failing. What is checked here is
 * cheap and certain: the magic, a version llama.cpp reads (2 or 3), and counts of tensors and
 * metadata entries a real model could have.
 */
import { open } from 'node:fs/promises';

const headerBytes = 24;
/** Far above any real model (a few thousand tensors, a few hundred metadata keys). */
const maximumCount = 1_000_000n;

/** Throws an error naming the file and what is wrong with it, or returns when it may be a GGUF. */
export async function checkGgufHeader(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const header = Buffer.alloc(headerBytes);
    const { bytesRead } = await handle.read(header, 0, headerBytes, 0);
    const problem = headerProblem(header.subarray(0, bytesRead));
    if (problem !== undefined) throw new Error(`${file} is not a usable GGUF model: ${problem}. Set LLM_MODEL to a .gguf model file, or delete it to fetch it again.`);
  } finally {
    await handle.close();
  }
}

function headerProblem(header: Buffer): string | undefined {
  if (header.length < headerBytes) return `it holds only ${header.length} bytes`;
  if (header.toString('latin1', 0, 4) !== 'GGUF') return 'it does not start with the GGUF magic';
  const version = header.readUInt32LE(4);
  if (version !== 2 && version !== 3) return `its GGUF version ${version} is not one llama.cpp reads (2 or 3)`;
  const tensors = header.readBigUInt64LE(8);
  const entries = header.readBigUInt64LE(16);
  if (tensors === 0n || tensors > maximumCount || entries > maximumCount) return `its header counts ${tensors} tensors and ${entries} metadata entries`;
  return undefined;
}
