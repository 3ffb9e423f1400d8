/**
 * Issue 28's card target: any card import answers within 1 s on this 2-core machine, and
 * `/healthz` never waits more than 100 ms behind one. The service runs as `npm start` runs it;
 * this process sends the cards over `POST /api/v0/characters/import` and meanwhile probes
 * `/healthz` every 10 ms on a connection of its own, timing each probe.
 *
 * The cards: the hostile one of the issue (a 9 MB PNG of 750,000 empty ancillary chunks, then a
 * valid `chara` chunk: refused), four of them at once, and the largest real card the import
 * takes (a PNG of a V3 card and its V2 backfill with a lorebook of 2,000 entries, the book's cap,
 * and a 980 × 980 image: 9.6 MB; made, then deleted), 12 of each. `npm run bench -- cards`.
 */
import { crc32 } from 'node:zlib';
import { Agent, request } from 'undici';
import { makePngCard } from './card-import.js';
import { startBenchService } from './setup.js';
import { megabytes, percentile, round } from './stats.js';

const imports = 12;

/** A PNG chunk with a right checksum. */
function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(data.byteLength + 12);
  out.writeUInt32BE(data.byteLength, 0);
  out.write(type, 4, 'latin1');
  Buffer.from(data).copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, out.byteLength - 4)), out.byteLength - 4);
  return out;
}

/** The card: a small real card PNG with `count` empty `teXt` chunks after its header. */
export function manyChunksPng(count = 750_000): Buffer {
  const { png } = makePngCard(1);
  const empty = chunk('teXt', new Uint8Array());
  const filler = Buffer.alloc(empty.byteLength * count);
  for (let index = 0; index < count; index += 1) empty.copy(filler, index * empty.byteLength);
  // The signature (8 bytes) and IHDR (25) come first.
  return Buffer.concat([png.subarray(0, 33), filler, png.subarray(33)]);
}

interface Probe {
  sentAt: number;
  ms: number;
}

export async function benchmarkHostileCards(dataDir: string) {
  const bench = await startBenchService(dataDir, { script: 'reply:unused' });
  const imported = new Agent({ connections: null, pipelining: 1 });
  const probed = new Agent({ connections: 1, pipelining: 1 });
  try {
    const { client } = await bench.account('card-bringer');
    // Bodies are made before they are timed: this process's own event loop times the probes too.
    const bodyOf = (png: Uint8Array) => Buffer.from(JSON.stringify({ data: Buffer.from(png).toString('base64'), mimeType: 'image/png' }));
    const send = async (sent: Buffer) => {
      const started = performance.now();
      const response = await request(`${bench.service.url}/api/v0/characters/import`, {
        method: 'POST',
        dispatcher: imported,
        headers: { authorization: `Bearer ${client.key}`, 'content-type': 'application/json' },
        body: sent,
      });
      const body = (await response.body.json()) as { character?: { id: string }; error?: { code: string } };
      const ms = performance.now() - started;
      return { ms, status: response.statusCode, code: body.error?.code ?? 'created', characterId: body.character?.id };
    };

    const probes: Probe[] = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const sentAt = performance.now();
        const response = await request(`${bench.service.url}/healthz`, { dispatcher: probed });
        await response.body.dump();
        probes.push({ sentAt, ms: performance.now() - sentAt });
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();

    /** Imports `png` `imports` times, one after another (`width` at once), with the probes sent meanwhile. */
    const measure = async (png: Uint8Array, width = 1) => {
      const body = bodyOf(png);
      const from = performance.now();
      const answers: Awaited<ReturnType<typeof send>>[] = [];
      for (let index = 0; index < imports; index += width) answers.push(...(await Promise.all(Array.from({ length: width }, () => send(body)))));
      const during = probes.filter((each) => each.sentAt >= from).map((each) => each.ms);
      // Made characters go again, after the count: an account holds at most 20.
      for (const { characterId } of answers) {
        if (characterId === undefined) continue;
        const deleted = await request(`${bench.service.url}/api/v0/characters/${characterId}`, { method: 'DELETE', dispatcher: imported, headers: { authorization: `Bearer ${client.key}` } });
        await deleted.body.dump();
      }
      const times = answers.map((answer) => answer.ms);
      return {
        cardBytes: png.byteLength,
        imports: answers.length,
        answers: [...new Set(answers.map((answer) => `${answer.status} ${answer.code}`))],
        importP50Ms: round(percentile(times, 0.5), 1),
        importMaxMs: round(Math.max(...times), 1),
        healthzProbes: during.length,
        healthzP50Ms: round(percentile(during, 0.5), 1),
        healthzMaxMs: round(Math.max(...during), 1),
      };
    };

    const hostile = manyChunksPng();
    // The book at its 2,000 entries (lorebookLimits), the rest a 980 × 980 image of noise.
    const large = makePngCard(9.5 * 1024 * 1024, { avatarSide: 980, maxEntries: 2_000 }).png;
    await measure(makePngCard(64 * 1024).png); // warm-up, not counted
    const before = await bench.service.usage();
    const figures = {
      manyChunks: await measure(hostile),
      manyChunksFourAtOnce: await measure(hostile, 4),
      largestRealCard: await measure(large),
    };
    const after = await bench.service.usage();
    probing = false;
    await probe;
    return { ...figures, serviceRssMb: { before: megabytes(before.rssBytes), peak: megabytes(after.maxRssBytes) } };
  } finally {
    await imported.close();
    await probed.close();
    await bench.stop();
  }
}
