/**
 * A fake Cog container (the SDXL model the spec's payload describes) in its own process for
 * the image benchmarks: no sampling time and eight prediction slots, so the figures are our
 * path's cost, not the engine's. It keeps the wall-clock time (ms) each prediction's answer
 * was written, by prompt, and hands them over on request.
 */
import { startFakeCog } from '../test/fakes/images/fake-cog.js';

const engine = await startFakeCog({ stepMs: 0, steps: 1, capacity: 8 });
const answeredAt: Array<[string, number]> = [];
engine.server.on('request', (request, response) => {
  if (request.method !== 'PUT' || !request.url?.startsWith('/predictions/')) return;
  const chunks: Buffer[] = [];
  request.on('data', (chunk: Buffer) => chunks.push(chunk));
  response.on('finish', () => {
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { input?: { prompt?: string } };
      if (response.statusCode === 200 && body.input?.prompt) answeredAt.push([body.input.prompt, performance.timeOrigin + performance.now()]);
    } catch {
      // Not a request we measure.
    }
  });
});
process.send?.({ type: 'ready', url: engine.url });
process.on('message', (message: { type: string }) => {
  if (message.type === 'answered') process.send?.({ type: 'answered', answeredAt });
  if (message.type === 'usage') {
    const usage = process.resourceUsage();
    process.send?.({ type: 'usage', maxRssBytes: usage.maxRSS * 1024, rssBytes: process.memoryUsage().rss, cpuMicros: usage.userCPUTime + usage.systemCPUTime });
  }
  if (message.type === 'stop') void engine.close().then(() => process.exit(0));
});
