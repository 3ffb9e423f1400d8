/**
 * Discord ids and timestamps. Snowflakes carry their creation time, and discord.js reads it back
 * (`createdTimestamp`, the "old message" delete bucket), so ids must come from the fake's clock and
 * must keep increasing even when a test moves that clock backwards.
 */

/** Milliseconds since the Unix epoch of Discord's epoch (2015-01-01T00:00:00Z). */
export const DISCORD_EPOCH = 1_420_070_400_000;

/** A clock in epoch milliseconds; the fake's notion of "now". */
export type Clock = () => number;

/** Makes increasing snowflakes stamped with the fake's clock. */
export class SnowflakeFactory {
  readonly #clock: Clock;
  #lastMilliseconds = 0;
  #increment = 0;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** A new id, strictly greater than every id made before by this factory. */
  next(): string {
    // A clock that stands still or goes back must not make ids collide or decrease.
    const milliseconds = Math.max(Math.floor(this.#clock()), this.#lastMilliseconds);
    if (milliseconds === this.#lastMilliseconds) {
      this.#increment += 1;
    } else {
      this.#lastMilliseconds = milliseconds;
      this.#increment = 0;
    }
    // 4096 ids per millisecond; past that, borrow the next millisecond as Discord's workers would.
    if (this.#increment > 0xfff) {
      this.#lastMilliseconds += 1;
      this.#increment = 0;
    }
    const id = (BigInt(this.#lastMilliseconds - DISCORD_EPOCH) << 22n) | (1n << 17n) | BigInt(this.#increment);
    return id.toString();
  }
}

/** The creation time, in epoch milliseconds, encoded in a snowflake. */
export function snowflakeTimestamp(id: string): number {
  return Number(BigInt(id) >> 22n) + DISCORD_EPOCH;
}

/** Formats epoch milliseconds the way Discord does: `2024-05-01T12:00:00.123000+00:00`. */
export function discordTimestamp(milliseconds: number): string {
  return new Date(milliseconds).toISOString().replace('Z', '000+00:00');
}
