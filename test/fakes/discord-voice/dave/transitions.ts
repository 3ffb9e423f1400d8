/**
 * A DAVE group's commit transitions as the voice gateway runs them: each gets an id (0 for the
 * commit that establishes a group, which clients execute at once), waits for every member's
 * ready (op 23), and is executed (op 22) when all have said so or when the timeout runs out.
 */

/** A commit transition as the gateway ran it. */
export interface DaveTransition {
  id: number;
  /** The epoch the commit moved the group to. */
  epoch: number;
  committer: string;
  added: string[];
  removed: string[];
  announcedAt: number;
  /** Members whose op 23 is still awaited (left as it was when the timeout executed it). */
  awaiting: string[];
  executedAt: number | null;
  /** Executed because the timeout ran out, not because everyone was ready. */
  timedOut: boolean;
}

export class Transitions {
  readonly records: DaveTransition[] = [];
  readonly #timers = new Map<number, NodeJS.Timeout>();
  readonly #timeoutMs: number;
  readonly #execute: (transition: DaveTransition) => void;
  #nextId = 1;

  /** `execute` sends op 22 once a transition is executed, whichever way. */
  constructor(options: { timeoutMs: number; execute(transition: DaveTransition): void }) {
    this.#timeoutMs = options.timeoutMs;
    this.#execute = options.execute;
  }

  /** A new transition for a commit; `initial` (a group's first commit) gets id 0 and counts as executed. */
  open(fields: Pick<DaveTransition, 'epoch' | 'committer' | 'added' | 'removed'>, initial: boolean): DaveTransition {
    const announcedAt = performance.now();
    const transition: DaveTransition = { id: initial ? 0 : this.#takeId(), ...fields, announcedAt, awaiting: [], executedAt: initial ? announcedAt : null, timedOut: false };
    this.records.push(transition);
    return transition;
  }

  /** Starts waiting for these members' op 23 (after op 29 and op 30 went out), with the timeout. */
  await(transition: DaveTransition, members: string[]): void {
    if (transition.executedAt !== null) return;
    transition.awaiting = members;
    this.#timers.set(transition.id, setTimeout(() => this.#done(transition, true), this.#timeoutMs).unref());
    if (members.length === 0) this.#done(transition, false);
  }

  isPending(id: number): boolean {
    return this.#timers.has(id);
  }

  /** Op 23 from a member. */
  ready(userId: string, id: number): void {
    const transition = this.records.find((candidate) => candidate.id === id && candidate.executedAt === null);
    if (transition === undefined) return;
    transition.awaiting = transition.awaiting.filter((candidate) => candidate !== userId);
    if (transition.awaiting.length === 0) this.#done(transition, false);
  }

  /** The member will answer none of the pending transitions: it left, or said op 31. */
  excuse(userId: string): void {
    for (const id of [...this.#timers.keys()]) this.ready(userId, id);
  }

  /** The group starts over: pending transitions are dropped, never executed. */
  abandon(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    for (const transition of this.records) if (transition.executedAt === null) transition.awaiting = [];
  }

  #done(transition: DaveTransition, timedOut: boolean): void {
    if (transition.executedAt !== null) return;
    clearTimeout(this.#timers.get(transition.id));
    this.#timers.delete(transition.id);
    transition.executedAt = performance.now();
    transition.timedOut = timedOut;
    this.#execute(transition);
  }

  #takeId(): number {
    const id = this.#nextId;
    this.#nextId = id >= 0xffff ? 1 : id + 1;
    return id;
  }
}
