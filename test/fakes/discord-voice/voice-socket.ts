/**
 * The voice gateway protocol on one WebSocket, as @discordjs/voice 0.19 speaks it (v8): Hello on
 * connect; identify → Ready; select protocol → session description with the DAVE protocol version
 * (0: the client keeps DAVE loaded but sends plain Opus; 1: DAVE's messages follow, binary ones
 * as `[u8 opcode][body]` from the client); heartbeats; speaking; resume → Resumed.
 * Misbehaviour gets Discord's close codes, so a broken client fails loudly in tests.
 */
import { randomBytes } from 'node:crypto';
import { VoiceCloseCodes, VoiceOpcodes } from 'discord-api-types/voice/v8';
import type { RawData, WebSocket } from 'ws';
import type { VoiceSession } from './voice-session.js';

/** What the socket handler needs from the server. */
export interface VoiceSessionHost {
  readonly heartbeatIntervalMs: number;
  readonly modes: readonly string[];
  readonly udpPort: number;
  /** Starts a session for a valid identify, or says which close code it deserves. */
  identify(data: Record<string, unknown>, socket: WebSocket): VoiceSession | number;
  /** The session a resume names, if it can still be resumed. */
  resumable(data: Record<string, unknown>): VoiceSession | undefined;
  /** Other users in the session's channel, for op 11 Clients Connect. */
  occupants(session: VoiceSession): string[];
  changed(): void;
  /** The DAVE protocol version the session description announces. */
  daveProtocolVersion(): number;
  /** The session description went out with DAVE: the session joins its channel's group. */
  daveStarted(session: VoiceSession): void;
  /** A binary DAVE message (op 26, 28); false when the opcode is not one a client sends. */
  daveBinary(session: VoiceSession, op: number, payload: Buffer): boolean;
  /** A JSON DAVE message (op 23, 31); false when DAVE is off for the session. */
  daveMessage(session: VoiceSession, op: number, data: Record<string, unknown>): boolean;
}

/** DAVE ops a client may send even when the server chose protocol version 0. */
const TOLERATED_OPCODES = new Set<number>([VoiceOpcodes.DaveTransitionReady, VoiceOpcodes.DaveMlsInvalidCommitWelcome]);

/** Serves one voice WebSocket until it closes. */
export function serveVoiceSocket(socket: WebSocket, host: VoiceSessionHost): void {
  let session: VoiceSession | null = null;
  let lastHeartbeat = performance.now();
  // Discord closes with 4009 when heartbeats stop; three intervals leave room for a busy event loop.
  const watchdog = setInterval(() => {
    if (performance.now() - lastHeartbeat > 3 * host.heartbeatIntervalMs) socket.close(VoiceCloseCodes.SessionTimeout, 'Session timeout');
  }, host.heartbeatIntervalMs);
  const close = (code: number, reason: string): void => socket.close(code, reason);

  socket.on('close', (code: number) => {
    clearInterval(watchdog);
    if (session === null || session.socket !== socket) return;
    session.record.closeCodes.push(code);
    session.record.status = 'closed';
    session.socket = null;
    host.changed();
  });

  socket.on('message', (raw: RawData, isBinary: boolean) => {
    const at = performance.now();
    if (isBinary) {
      // Binary frames carry DAVE's MLS messages: one opcode byte, then the body.
      const bytes = Buffer.from(raw as Buffer);
      const op = bytes[0] ?? -1;
      session?.record.received.push({ at, op, d: null });
      if (session === null) return close(VoiceCloseCodes.NotAuthenticated, 'Not authenticated');
      if (session.record.daveProtocolVersion > 0 && !host.daveBinary(session, op, bytes.subarray(1))) close(VoiceCloseCodes.UnknownOpcode, 'Unknown opcode');
      return;
    }
    let payload: { op?: unknown; d?: unknown };
    try {
      payload = JSON.parse(raw.toString()) as typeof payload;
    } catch {
      return close(VoiceCloseCodes.FailedToDecode, 'Failed to decode payload');
    }
    const op = typeof payload.op === 'number' ? payload.op : -1;
    const data = (typeof payload.d === 'object' && payload.d !== null ? payload.d : {}) as Record<string, unknown>;
    session?.record.received.push({ at, op, d: payload.d });
    switch (op) {
      case VoiceOpcodes.Heartbeat:
        lastHeartbeat = at;
        if (session !== null) {
          session.record.heartbeats += 1;
          if (typeof data['seq_ack'] === 'number') session.acknowledge(data['seq_ack']);
        }
        socket.send(JSON.stringify({ op: VoiceOpcodes.HeartbeatAck, d: { t: data['t'] } }));
        host.changed();
        return;
      case VoiceOpcodes.Identify: {
        if (session !== null) return close(VoiceCloseCodes.AlreadyAuthenticated, 'Already authenticated');
        const identified = host.identify(data, socket);
        if (typeof identified === 'number') return close(identified, 'Authentication failed');
        session = identified;
        session.record.received.push({ at, op, d: payload.d });
        session.sendSequenced(VoiceOpcodes.Ready, { ssrc: session.record.ssrc, ip: '127.0.0.1', port: host.udpPort, modes: host.modes, experiments: [] });
        host.changed();
        return;
      }
      case VoiceOpcodes.Resume: {
        if (session !== null) return close(VoiceCloseCodes.AlreadyAuthenticated, 'Already authenticated');
        const resumed = host.resumable(data);
        const sequence = typeof data['seq_ack'] === 'number' ? data['seq_ack'] : -1;
        if (resumed === undefined || !resumed.resume(socket, sequence)) return close(VoiceCloseCodes.SessionNoLongerValid, 'Session no longer valid');
        session = resumed;
        session.record.received.push({ at, op, d: payload.d });
        session.record.sockets += 1;
        session.record.resumes += 1;
        session.record.status = session.record.secretKey === null ? 'identified' : 'ready';
        socket.send(JSON.stringify({ op: VoiceOpcodes.Resumed, d: null }));
        host.changed();
        return;
      }
      case VoiceOpcodes.SelectProtocol:
        if (session === null) return close(VoiceCloseCodes.NotAuthenticated, 'Not authenticated');
        return selectProtocol(session, data, host, close);
      case VoiceOpcodes.Speaking:
        if (session === null) return close(VoiceCloseCodes.NotAuthenticated, 'Not authenticated');
        session.record.speaking.push({ at, speaking: Number(data['speaking']), delay: Number(data['delay']), ssrc: Number(data['ssrc']) });
        host.changed();
        return;
      default:
        if (session !== null && session.record.daveProtocolVersion > 0 && host.daveMessage(session, op, data)) return;
        if (session !== null && TOLERATED_OPCODES.has(op)) return;
        close(session === null ? VoiceCloseCodes.NotAuthenticated : VoiceCloseCodes.UnknownOpcode, 'Unknown opcode');
    }
  });

  socket.send(JSON.stringify({ op: VoiceOpcodes.Hello, d: { v: 8, heartbeat_interval: host.heartbeatIntervalMs } }));
}

/** Op 1: the client's address from IP discovery and its chosen mode; answered with the key. */
function selectProtocol(session: VoiceSession, data: Record<string, unknown>, host: VoiceSessionHost, close: (code: number, reason: string) => void): void {
  const address = (typeof data['data'] === 'object' && data['data'] !== null ? data['data'] : {}) as Record<string, unknown>;
  if (data['protocol'] !== 'udp') return close(VoiceCloseCodes.UnknownProtocol, 'Unknown protocol');
  const mode = String(address['mode']);
  if (!host.modes.includes(mode)) return close(VoiceCloseCodes.UnknownEncryptionMode, 'Unknown encryption mode');
  const record = session.record;
  record.mode = mode;
  record.clientAddress = { address: String(address['address']), port: Number(address['port']) };
  record.secretKey = randomBytes(32);
  record.status = 'ready';
  record.daveProtocolVersion = host.daveProtocolVersion();
  session.sendSequenced(VoiceOpcodes.SessionDescription, {
    mode,
    secret_key: [...record.secretKey],
    dave_protocol_version: record.daveProtocolVersion,
    audio_codec: 'opus',
    video_codec: 'H264',
    media_session_id: randomBytes(16).toString('hex'),
  });
  const others = host.occupants(session);
  if (others.length > 0) session.sendSequenced(VoiceOpcodes.ClientsConnect, { user_ids: others });
  // The external sender and any proposals come after op 11, so the client knows whom they add.
  if (record.daveProtocolVersion > 0) host.daveStarted(session);
  host.changed();
}
