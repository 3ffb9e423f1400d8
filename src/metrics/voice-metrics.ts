import { getVoiceConnections, type VoiceConnection } from '@discordjs/voice';
import type { Metrics } from './metrics.js';

/**
 * Counts this process's voice connections by status (`signalling`, `connecting`, `ready`,
 * `disconnected`) when Prometheus scrapes, from @discordjs/voice's own registry of
 * connections. Apart from the gateway watcher so an API-only process never loads the voice
 * library.
 */
export function watchVoiceConnections(metrics: Metrics, connections: () => Map<string, VoiceConnection> = getVoiceConnections): void {
  metrics.discord.collectVoiceWith(() => [...connections().values()].map((connection) => connection.state.status));
}
