/**
 * Keeps the bot's trouble away from the rest of the service: the bot starts in the background,
 * retries with exponential backoff when Discord is unreachable or answers 5xx, and gives up
 * with one clear log line when Discord refuses the token, which no retry can mend. The HTTP API
 * serves throughout and reports the state on /healthz and /readyz.
 */
import { DiscordjsErrorCodes, Events } from 'discord.js';
import type { Logger } from '../core/ports.js';
import { GatewayRefused, type RunningBot } from './bot.js';
import { type DiscordStatus, ReadyWaiters } from './ready-waiters.js';

export type { DiscordStatus } from './ready-waiters.js';

export interface BotSupervisorOptions {
  /** First wait after a failed start; doubled after each failure. */
  initialRetryMs: number;
  maxRetryMs: number;
}

const stopWaitMs = 5_000;

export const defaultBotSupervisorOptions: BotSupervisorOptions = { initialRetryMs: 1_000, maxRetryMs: 5 * 60_000 };

export class BotSupervisor {
  #status: DiscordStatus = 'connecting';
  #bot: RunningBot | undefined;
  #stopped = false;
  #wake: (() => void) | undefined;
  #settled: Promise<void>;
  readonly #readyWaiters = new ReadyWaiters();

  constructor(
    start: () => Promise<RunningBot>,
    private readonly logger: Logger,
    private readonly options: BotSupervisorOptions = defaultBotSupervisorOptions,
  ) {
    this.#settled = this.#run(start);
  }

  get status(): DiscordStatus {
    return this.#status;
  }

  /** Resolves once the bot is ready; rejects if it fails for good or is stopped first. */
  whenReady(): Promise<void> {
    return this.#readyWaiters.wait(this.#status);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    // A login still trying an unreachable Discord may take a minute of REST retries; the
    // service does not wait for it (the attempt stops its client itself when it ends).
    await Promise.race([this.#settled, new Promise((resolve) => setTimeout(resolve, stopWaitMs).unref())]);
    await this.#bot?.stop();
    this.#bot = undefined;
    this.#readyWaiters.settle(new Error('the Discord bot was stopped'));
  }

  async #run(start: () => Promise<RunningBot>): Promise<void> {
    let delay = this.options.initialRetryMs;
    for (let attempt = 1; !this.#stopped; attempt += 1) {
      try {
        const bot = await start();
        if (this.#stopped) {
          await bot.stop();
          return;
        }
        this.#bot = bot;
        this.#watch(bot);
        this.#setStatus('ready');
        return;
      } catch (error) {
        if (this.#stopped) return;
        if (isRefusal(error)) {
          this.logger.error(
            { err: error },
            'Discord refused the bot token (DISCORD_TOKEN) or its intents; the bot stays off until the configuration is fixed and the service restarted. The HTTP API keeps serving.',
          );
          this.#setStatus('failed');
          return;
        }
        this.logger.warn({ err: error, attempt, retryInMs: delay }, 'Discord bot could not start; retrying');
        await this.#sleep(delay);
        delay = Math.min(delay * 2, this.options.maxRetryMs);
      }
    }
  }

  /** Follows the gateway after start-up: discord.js reconnects by itself unless Discord refuses it. */
  #watch(bot: RunningBot): void {
    bot.client.on(Events.ShardReconnecting, () => this.#setStatus('connecting'));
    bot.client.on(Events.ShardResume, () => this.#setStatus('ready'));
    bot.client.on(Events.ShardReady, () => this.#setStatus('ready'));
    bot.client.on(Events.ShardDisconnect, () => this.#setStatus('failed'));
  }

  #setStatus(status: DiscordStatus): void {
    this.#status = status;
    if (status === 'ready') this.#readyWaiters.settle();
    if (status === 'failed') this.#readyWaiters.settle(new Error('the Discord bot failed for good'));
  }

  #sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, milliseconds);
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

/** Failures no retry can mend: a token Discord refuses (401 on /gateway/bot, close 4004) or intents it refuses. */
function isRefusal(error: unknown): boolean {
  if (error instanceof GatewayRefused) return true;
  if (typeof error !== 'object' || error === null) return false;
  const { code, status } = error as { code?: unknown; status?: unknown };
  return code === DiscordjsErrorCodes.TokenInvalid || status === 401;
}
