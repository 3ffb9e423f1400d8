/**
 * One voice session on the server side: its record, the WebSocket it currently uses, and the
 * sequenced messages it was sent. Voice gateway v8 numbers server messages (`seq`) so that a
 * client resuming after a dropped socket gets, by its `seq_ack`, exactly what it missed; DAVE's
 * binary messages share that numbering (a u16 before their opcode).
 */
import { WebSocket } from 'ws';
import type { ConnectionRecording } from './recording.js';

/** Discord keeps a bounded backlog; a client that falls further behind must identify again. */
const BACKLOG_LIMIT = 100;

export class VoiceSession {
  readonly record: ConnectionRecording;
  /** The voice token it identified with; resume must present the same one. */
  readonly token: string;
  socket: WebSocket | null;
  /** Called once when the session ends. */
  readonly #onEnded: () => void;
  #ended = false;
  /** SSRCs of other users this session was told about with op 5; a new session starts knowing none. */
  readonly announced = new Set<number>();
  /** Nonce counter of the packets relayed to this client; its key is its own, so the count is too. */
  outgoingCounter = 0;
  #sequence = 0;
  #backlog: Array<{ sequence: number; data: string | Buffer }> = [];

  constructor(record: ConnectionRecording, token: string, socket: WebSocket, onEnded: () => void = () => undefined) {
    this.record = record;
    this.token = token;
    this.socket = socket;
    this.#onEnded = onEnded;
  }

  /** Set when the session can no longer be resumed: left, replaced, or closed with a final code. */
  get ended(): boolean {
    return this.#ended;
  }

  end(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#onEnded();
  }

  get open(): boolean {
    return this.socket?.readyState === WebSocket.OPEN;
  }

  /** Sends a message that carries `seq` and is kept for replay on resume. */
  sendSequenced(op: number, data: unknown): void {
    this.#sequence += 1;
    this.#keep(JSON.stringify({ op, d: data, seq: this.#sequence }));
  }

  /** Sends a binary message (DAVE's MLS ops): u16 sequence number, u8 opcode, body. */
  sendBinary(op: number, body: Buffer): void {
    this.#sequence += 1;
    const header = Buffer.alloc(3);
    header.writeUInt16BE(this.#sequence % 2 ** 16);
    header.writeUInt8(op, 2);
    this.#keep(Buffer.concat([header, body]));
  }

  #keep(data: string | Buffer): void {
    this.#backlog.push({ sequence: this.#sequence, data });
    if (this.#backlog.length > BACKLOG_LIMIT) this.#backlog.shift();
    if (this.open) this.socket?.send(data);
  }

  /** Forgets what the client has acknowledged (heartbeat `seq_ack`). */
  acknowledge(sequence: number): void {
    this.#backlog = this.#backlog.filter((entry) => entry.sequence > sequence);
  }

  /** Moves the session to a new socket and replays what came after `sequence`; false when that is gone. */
  resume(socket: WebSocket, sequence: number): boolean {
    const oldest = this.#backlog[0]?.sequence ?? this.#sequence + 1;
    if (sequence > this.#sequence || sequence + 1 < oldest) return false;
    if (this.open && this.socket !== socket) this.socket?.close(4006, 'Session resumed elsewhere');
    this.socket = socket;
    for (const entry of this.#backlog) if (entry.sequence > sequence) socket.send(entry.data);
    return true;
  }

  /** Closes the current socket; codes other than 4015 and < 4000 also end the session, as the client will not resume. */
  drop(code: number, abrupt: boolean): boolean {
    if (!(code === 4015 || code < 4000)) this.end();
    if (!this.open) return false;
    if (abrupt) this.socket?.terminate();
    else this.socket?.close(code, 'Dropped by the test');
    return true;
  }
}
