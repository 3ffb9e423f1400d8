/**
 * The service in its own process for benchmarks, as `npm start` runs it, so the load
 * generator and the fake engine do not share its core. Reports its URL, and its CPU time and
 * peak RSS when asked, over the IPC channel.
 */
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { startService } from '../src/main.js';

const config = parseConfig(process.env);
const service = await startService(config, createLogger(config.logLevel));
process.send?.({ type: 'ready', url: service.url });
process.on('message', (message: { type: string }) => {
  if (message.type === 'usage') {
    const usage = process.resourceUsage();
    process.send?.({
      type: 'usage',
      maxRssBytes: usage.maxRSS * 1024,
      rssBytes: process.memoryUsage().rss,
      cpuMicros: usage.userCPUTime + usage.systemCPUTime,
    });
  }
  if (message.type === 'stop') {
    void service.stop().then(() => process.exit(0));
  }
});
