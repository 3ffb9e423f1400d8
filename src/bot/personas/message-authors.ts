import type { Logger } from '../../core/ports.js';
import type { DiscordChannelRepository } from '../../core/repositories.js';

/**
 * How long the bot remembers which character wrote each of its messages (so a reply to one
 * reaches that character). A reply to a message older than this is read by its words alone.
 */
export const messageAuthorRetentionMs = 180 * 24 * 60 * 60 * 1000;

export interface ForgettingOptions {
  /** Between two rounds (default an hour); the first comes a minute after start. */
  everyMs?: number;
  retentionMs?: number;
  /** Records deleted per statement, so no round holds the table long. */
  batch?: number;
  now?: () => number;
}

type AuthorRecords = Pick<DiscordChannelRepository, 'forgetCharacterMessages'>;

/**
 * One round: forgets every record older than the retention, a batch at a time. Any process may
 * run it at any time; deleting what another already deleted changes nothing.
 */
export async function forgetOldMessageAuthors(records: AuthorRecords, options: ForgettingOptions = {}): Promise<number> {
  const batch = options.batch ?? 5_000;
  const before = (options.now ?? Date.now)() - (options.retentionMs ?? messageAuthorRetentionMs);
  let forgotten = 0;
  for (;;) {
    const deleted = await records.forgetCharacterMessages(before, batch);
    forgotten += deleted;
    if (deleted < batch) return forgotten;
  }
}

/** Runs `forgetOldMessageAuthors` now and then until stopped; failures are logged and tried again next round. */
export function keepForgettingOldMessageAuthors(records: AuthorRecords, logger: Logger, options: ForgettingOptions = {}): { stop(): void } {
  const everyMs = options.everyMs ?? 60 * 60 * 1000;
  let timer: NodeJS.Timeout | undefined;
  const round = (delayMs: number) => {
    timer = setTimeout(() => {
      forgetOldMessageAuthors(records, options)
        .then((forgotten) => {
          if (forgotten > 0) logger.info({ forgotten }, 'forgot who wrote old bot messages');
        })
        .catch((error: unknown) => logger.warn({ err: error }, 'could not forget who wrote old bot messages'))
        .finally(() => {
          if (timer !== undefined) round(everyMs);
        });
    }, delayMs);
    timer.unref();
  };
  round(Math.min(60_000, everyMs));
  return {
    stop() {
      clearTimeout(timer);
      timer = undefined;
    },
  };
}
