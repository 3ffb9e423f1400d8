/**
 * The gateway: JSON over WebSocket, no compression. Hello, identify → READY and one GUILD_CREATE
 * per guild, heartbeat acks, resume with replay of missed events, invalid session when a session
 * cannot be resumed, and Discord's close codes for protocol errors. Events are filtered by the
 * session's intents, and message content is blanked without the MessageContent intent, as on Discord.
 * Sessions identify as a shard: a guild's events (any payload with `guild_id`) go only to the
 * session of the shard that owns the guild, everything else (DMs) to shard 0 (see sharding.ts).
 */
import type { IncomingMessage } from 'node:http';
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import { GatewayIntentBits, GatewayOpcodes } from 'discord-api-types/v10';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import { parseShard, shardOf, type ShardingRules, type ShardKey } from './sharding.js';

/** Who receives a dispatch. */
export interface DispatchAudience {
  /** Intent bits a session must have (0: every session gets it). */
  intents: number;
  /** The payload for sessions without the MessageContent intent, when it differs. */
  withoutContent?: unknown;
}

/** Sends gateway events; the REST routes and the test driver depend on this, not on WebSockets. */
export interface Dispatcher {
  dispatch(event: string, data: unknown, audience: DispatchAudience): void;
}

export interface GatewayOptions {
  token: string;
  /** ws:// URL clients are told to resume on. */
  url: () => string;
  heartbeatIntervalMs: number;
  /** READY's `d` for a new session, without `session_id` and `resume_gateway_url`. */
  readyData: () => Record<string, unknown>;
  /** One GUILD_CREATE `d` per guild (each with `id`), sent after READY to the shard owning it. */
  guildCreates: () => Array<{ id: string }>;
  /** Session start limit, identify buckets, the guilds-per-shard limit. */
  sharding: ShardingRules;
  onChange: () => void;
  /**
   * Op 4 Voice State Update from an identified session, with that session's id (Discord's voice
   * `session_id`). Optional: voice lives in test/fakes/discord-voice; without it op 4 is ignored.
   */
  onVoiceStateUpdate?: (data: Record<string, unknown>, sessionId: string) => void;
}

/** Counts a test can assert reconnection paths with. */
export interface GatewayStats {
  connections: number;
  openConnections: number;
  identifies: number;
  resumes: number;
  invalidSessions: number;
  heartbeats: number;
  /** Events sent again on resume because the client had not received them. */
  replayedEvents: number;
}

interface Session {
  id: string;
  intents: number;
  shard: ShardKey;
  sequence: number;
  socket: WebSocket | null;
  /** Events not yet acknowledged by a heartbeat, for replay on resume. */
  backlog: Array<{ sequence: number; event: string; json: string }>;
  overflowed: boolean;
}

/** Replay is refused (invalid session) past this many unacknowledged events. */
const BACKLOG_LIMIT = 10_000;

export class FakeGateway implements Dispatcher {
  readonly #options: GatewayOptions;
  readonly #server = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  readonly #sessions = new Map<string, Session>();
  readonly #stats: GatewayStats = { connections: 0, openConnections: 0, identifies: 0, resumes: 0, invalidSessions: 0, heartbeats: 0, replayedEvents: 0 };

  constructor(options: GatewayOptions) {
    this.#options = options;
  }

  get stats(): GatewayStats {
    return { ...this.#stats, openConnections: this.#server.clients.size };
  }

  /** Takes over an HTTP upgrade request. */
  handleUpgrade(request: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.#server.handleUpgrade(request, socket, head, (webSocket) => this.#accept(webSocket, request));
  }

  dispatch(event: string, data: unknown, audience: DispatchAudience): void {
    let json: string | undefined;
    let jsonWithoutContent: string | undefined;
    const guildId = typeof data === 'object' && data !== null ? (data as { guild_id?: unknown }).guild_id : undefined;
    for (const session of this.#sessions.values()) {
      if ((session.intents & audience.intents) !== audience.intents) continue;
      if (!ownsEvent(session.shard, typeof guildId === 'string' ? guildId : null)) continue;
      let payload: string;
      if (audience.withoutContent !== undefined && (session.intents & GatewayIntentBits.MessageContent) === 0) {
        payload = jsonWithoutContent ??= JSON.stringify(audience.withoutContent);
      } else {
        payload = json ??= JSON.stringify(data);
      }
      this.#send(session, event, payload, true);
    }
  }

  /** Closes every gateway socket: with `code` (default 4000, which discord.js resumes after) or abruptly. */
  dropConnections(options: { code?: number; abrupt?: boolean; invalidateSessions?: boolean } = {}): void {
    for (const socket of this.#server.clients) {
      if (options.abrupt === true) socket.terminate();
      else socket.close(options.code ?? 4000, 'Dropped by the test');
    }
    if (options.invalidateSessions === true) this.#sessions.clear();
  }

  /** Sends op 7 Reconnect to every socket, as Discord does before moving a session. */
  requestReconnect(): void {
    for (const socket of this.#server.clients) socket.send(JSON.stringify({ op: GatewayOpcodes.Reconnect, d: null }));
  }

  close(): void {
    for (const socket of this.#server.clients) socket.terminate();
    this.#server.close();
    this.#sessions.clear();
  }

  #send(session: Session, event: string, json: string, keep: boolean): void {
    session.sequence += 1;
    if (keep) {
      session.backlog.push({ sequence: session.sequence, event, json });
      if (session.backlog.length > BACKLOG_LIMIT) {
        session.backlog.shift();
        session.overflowed = true;
      }
    }
    if (session.socket?.readyState === WebSocket.OPEN) {
      session.socket.send(`{"op":0,"t":"${event}","s":${session.sequence},"d":${json}}`);
    }
  }

  #accept(socket: WebSocket, request: IncomingMessage): void {
    this.#stats.connections += 1;
    const query = new URL(request.url ?? '/', 'http://127.0.0.1').searchParams;
    if (query.get('v') !== null && query.get('v') !== '10') {
      socket.close(4012, 'Invalid API version');
      return;
    }
    if (query.get('encoding') !== null && query.get('encoding') !== 'json') {
      socket.close(4002, 'Error while decoding payload.');
      return;
    }
    let session: Session | null = null;
    socket.on('close', () => {
      if (session?.socket === socket) session.socket = null;
      this.#options.onChange();
    });
    socket.on('message', (raw: RawData, isBinary: boolean) => {
      let payload: { op?: unknown; d?: unknown };
      try {
        payload = JSON.parse(isBinary ? Buffer.from(raw as Buffer).toString('utf8') : raw.toString()) as typeof payload;
      } catch {
        socket.close(4002, 'Error while decoding payload.');
        return;
      }
      const data = (typeof payload.d === 'object' && payload.d !== null ? payload.d : {}) as Record<string, unknown>;
      switch (payload.op) {
        case GatewayOpcodes.Heartbeat:
          if (session !== null && typeof payload.d === 'number') this.#acknowledge(session, payload.d);
          socket.send(JSON.stringify({ op: GatewayOpcodes.HeartbeatAck }));
          this.#stats.heartbeats += 1;
          this.#options.onChange();
          return;
        case GatewayOpcodes.Identify:
          if (session !== null) return socket.close(4005, 'Already authenticated.');
          if (!this.#tokenMatches(data['token'])) return socket.close(4004, 'Authentication failed.');
          if (typeof data['intents'] !== 'number') return socket.close(4013, 'Invalid intent(s).');
          session = this.#identify(socket, data['intents'], data['shard']);
          return;
        case GatewayOpcodes.Resume:
          if (session !== null) return socket.close(4005, 'Already authenticated.');
          if (!this.#tokenMatches(data['token'])) return socket.close(4004, 'Authentication failed.');
          session = this.#resume(socket, String(data['session_id']), Number(data['seq']));
          return;
        case GatewayOpcodes.VoiceStateUpdate:
          if (session === null) return socket.close(4003, 'Not authenticated.');
          this.#options.onVoiceStateUpdate?.(data, session.id);
          return;
        case GatewayOpcodes.PresenceUpdate:
        case GatewayOpcodes.RequestGuildMembers:
          if (session === null) socket.close(4003, 'Not authenticated.');
          return;
        default:
          socket.close(4001, 'Unknown opcode.');
      }
    });
    socket.send(JSON.stringify({ op: GatewayOpcodes.Hello, d: { heartbeat_interval: this.#options.heartbeatIntervalMs } }));
    this.#options.onChange();
  }

  /** When set, identify and resume are refused with 4004 whatever the token (a revoked token REST still took a moment ago). */
  refuseLogins = false;

  #tokenMatches(token: unknown): boolean {
    return !this.refuseLogins && typeof token === 'string' && token.replace(/^Bot\s+/i, '') === this.#options.token;
  }

  #acknowledge(session: Session, sequence: number): void {
    let drop = 0;
    while (drop < session.backlog.length && session.backlog[drop]!.sequence <= sequence) drop += 1;
    if (drop > 0) session.backlog.splice(0, drop);
  }

  #identify(socket: WebSocket, intents: number, shardField: unknown): Session | null {
    const shard = parseShard(shardField);
    if (shard === null) {
      socket.close(4010, 'Invalid shard.');
      return null;
    }
    const guilds = this.#options.guildCreates().filter((guild) => ownsEvent(shard, guild.id));
    const refusal = this.#options.sharding.admit(shard, guilds.length);
    if (refusal !== null) {
      if ('close' in refusal) socket.close(refusal.close, refusal.reason);
      else socket.send(JSON.stringify({ op: GatewayOpcodes.InvalidSession, d: false }));
      this.#stats.invalidSessions += 'close' in refusal ? 0 : 1;
      this.#options.onChange();
      return null;
    }
    this.#stats.identifies += 1;
    // The client will never resume a session of this shard it gave up on; keep memory flat across
    // reconnects. Other shards' dropped sessions stay: they may be resuming right now.
    for (const [id, old] of this.#sessions) {
      if (old.socket === null && old.shard[0] === shard[0] && old.shard[1] === shard[1]) this.#sessions.delete(id);
    }
    const session: Session = { id: randomBytes(16).toString('hex'), intents, shard, sequence: 0, socket, backlog: [], overflowed: false };
    this.#sessions.set(session.id, session);
    const ready = {
      ...this.#options.readyData(),
      guilds: guilds.map((guild) => ({ id: guild.id, unavailable: true })),
      shard,
      session_id: session.id,
      resume_gateway_url: this.#options.url(),
    };
    this.#send(session, 'READY', JSON.stringify(ready), false);
    for (const guild of guilds) this.#send(session, 'GUILD_CREATE', JSON.stringify(guild), true);
    this.#options.onChange();
    return session;
  }

  #resume(socket: WebSocket, sessionId: string, sequence: number): Session | null {
    const session = this.#sessions.get(sessionId);
    if (session === undefined || session.overflowed || !(sequence <= session.sequence)) {
      this.#stats.invalidSessions += 1;
      if (session !== undefined) this.#sessions.delete(sessionId);
      socket.send(JSON.stringify({ op: GatewayOpcodes.InvalidSession, d: false }));
      return null;
    }
    this.#stats.resumes += 1;
    if (session.socket !== null && session.socket !== socket) session.socket.close(4009, 'Session resumed elsewhere.');
    session.socket = socket;
    for (const entry of session.backlog) {
      if (entry.sequence <= sequence) continue;
      socket.send(`{"op":0,"t":"${entry.event}","s":${entry.sequence},"d":${entry.json}}`);
      this.#stats.replayedEvents += 1;
    }
    this.#send(session, 'RESUMED', '{}', false);
    this.#options.onChange();
    return session;
  }
}

/** A guild's events go to the shard owning it; events of no guild (DMs) to shard 0. */
function ownsEvent(shard: ShardKey, guildId: string | null): boolean {
  return guildId === null ? shard[0] === 0 : shardOf(guildId, shard[1]) === shard[0];
}
