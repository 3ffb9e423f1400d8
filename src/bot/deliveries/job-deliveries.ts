import { type Client, DiscordAPIError, InteractionWebhook, RESTJSONErrorCodes } from 'discord.js';
import type { Core } from '../../core/core.js';
import { AppError } from '../../core/errors.js';
import { type JobEvent, isFinal } from '../../core/images/jobs.js';
import type { Logger } from '../../core/ports.js';
import type { JobRecord } from '../../core/records.js';
import { type ChannelPacer, webhookKeyPrefix } from '../pacing/channel-pacer.js';
import type { DeliveryRecord, DeliveryRecords } from './delivery-records.js';
import { holdsShardOf } from '../sharding/shard-of.js';
import { type JobMessage, type OutputImage, endedView, resultView, trainingNotice, waitingView } from './image-views.js';

export interface JobDeliveriesOptions {
  /** Least time between two progress edits of one job's reply. */
  editIntervalMs: number;
  /**
   * A token this close to its end is not used: the final edit carries the images and must
   * arrive before Discord stops taking the token.
   */
  tokenMarginMs: number;
  /**
   * A waiting state (queued, generating, progress) is shown once it has lasted this long: a
   * job that finishes sooner goes straight to its result, saving Discord requests, which many
   * jobs at once run short of (default 500 ms).
   */
  showAfterMs?: number;
  now?: () => number;
}

/** One job being followed: its promised delivery, what its reply shows, and its pacing. */
interface Tracked {
  record: DeliveryRecord;
  job: JobRecord | undefined;
  progress: number | null;
  /** Place in the shared queue while waiting, as last read (the database answers it, so it is read ahead of an edit). */
  position: number | undefined;
  /** The reply's content and buttons as last shown, to skip edits that change nothing. */
  shown: string | undefined;
  inFlight: Promise<void> | undefined;
  timer: NodeJS.Timeout | undefined;
  nextEditAt: number;
  /** Discord refused the reply's webhook (token expired, reply deleted): results go to the channel. */
  replyGone: boolean;
  finishing: boolean;
}

/** What a view shows, to skip edits that change nothing. */
function viewKey(view: JobMessage): string {
  return JSON.stringify({ content: view.content, components: view.components.map((row) => row.toJSON()) });
}

/** How many replies at the front of the queue follow its movement. */
const refreshedQueuePositions = 5;

/** The pacer's key for an interaction webhook: Discord limits each token on its own. */
export function webhookBucket(applicationId: string, token: string): string {
  return `${webhookKeyPrefix}${applicationId}/${token}`;
}

/** Discord errors that mean the reply can no longer be edited through its interaction webhook. */
const replyGoneCodes: ReadonlySet<number | string> = new Set([
  RESTJSONErrorCodes.InvalidWebhookToken,
  RESTJSONErrorCodes.UnknownWebhook,
  RESTJSONErrorCodes.UnknownMessage,
  RESTJSONErrorCodes.UnknownInteraction,
  RESTJSONErrorCodes.MaximumNumberOfEditsToMessagesOlderThanOneHourReached,
]);
/** Discord errors that mean the bot cannot post in the channel; the user is messaged directly. */
const channelClosedCodes: ReadonlySet<number | string> = new Set([
  RESTJSONErrorCodes.UnknownChannel,
  RESTJSONErrorCodes.MissingAccess,
  RESTJSONErrorCodes.MissingPermissions,
  RESTJSONErrorCodes.CannotSendMessagesInNonTextChannel,
  RESTJSONErrorCodes.ThreadLocked,
  RESTJSONErrorCodes.InvalidActionOnArchivedThread,
]);

const isDiscordError = (error: unknown, codes: ReadonlySet<number | string>): boolean => error instanceof DiscordAPIError && codes.has(error.code);

/** Log fields of a failure; a Discord error's URL is left out, since a webhook URL carries the interaction token. */
export function failureFields(error: unknown): object {
  return error instanceof DiscordAPIError ? { discordCode: error.code, status: error.status, method: error.method, reason: error.message } : { err: error };
}

/**
 * Brings image jobs and face-model trainings to Discord. The reply to /imagine follows its job
 * (queued, progress, then the images); a training's owner is told how it ended. Each promise is
 * stored first (`DeliveryRecords`), so jobs that finish while the bot is down, or after the
 * 15-minute interaction token has run out, are still delivered: then as a new message in the
 * channel that mentions the user, or as a direct message when the channel is closed to the bot.
 *
 * Progress edits are throttled per job (`editIntervalMs`) and paced per webhook token and
 * across the bot by the `ChannelPacer`, one request in flight per job; a newer state replaces
 * an unsent one, so there is never a backlog. Final results go out at once.
 */
export class JobDeliveries {
  readonly #tracked = new Map<string, Tracked>();
  readonly #finishing = new Set<Promise<void>>();
  readonly #now: () => number;
  #client: Client<true> | undefined;
  #unsubscribe: (() => void) | undefined;

  constructor(
    private readonly core: Core,
    private readonly records: DeliveryRecords,
    private readonly pacer: ChannelPacer,
    private readonly logger: Logger,
    private readonly options: JobDeliveriesOptions,
  ) {
    this.#now = options.now ?? Date.now;
  }

  /**
   * Follows jobs from now on, and picks up the deliveries the last process left: those of the
   * guilds whose shards this client holds, so that with one process per shard each job is
   * delivered by exactly one (new deliveries are added by the process their interaction reached,
   * which is the same one).
   */
  async start(client: Client<true>): Promise<void> {
    this.#client = client;
    this.#unsubscribe = this.core.images.subscribe((event) => this.#heard(event));
    const pending = (await this.records.pending()).filter((record) => holdsShardOf(client, record.guildId));
    for (const record of pending) await this.#follow(record);
    if (pending.length > 0) this.logger.info({ deliveries: pending.length }, 'resumed image deliveries');
  }

  /** Promises a job's result to Discord: stored first, then followed. `shown` is what the reply shows already. */
  async add(record: DeliveryRecord, shown?: JobMessage): Promise<void> {
    await this.records.add(record);
    await this.#follow(record, shown);
  }

  /** Stops following; what is not delivered yet stays stored for the next start. */
  async stop(): Promise<void> {
    this.#unsubscribe?.();
    for (const tracked of this.#tracked.values()) {
      clearTimeout(tracked.timer);
      tracked.timer = undefined;
      tracked.finishing = true;
    }
    await Promise.allSettled([...this.#finishing, ...[...this.#tracked.values()].map((tracked) => tracked.inFlight)]);
    this.#tracked.clear();
  }

  async #follow(record: DeliveryRecord, shown?: JobMessage): Promise<void> {
    if (this.#tracked.has(record.jobId)) return;
    const tracked: Tracked = { record, job: undefined, progress: null, position: undefined, shown: shown && viewKey(shown), inFlight: undefined, timer: undefined, nextEditAt: 0, replyGone: false, finishing: false };
    // Tracked before the read, so an event in between is kept; the later state wins.
    this.#tracked.set(record.jobId, tracked);
    const found = await this.core.images.find(record.jobId);
    if (!found) {
      this.#tracked.delete(record.jobId);
      await this.records.remove(record.jobId);
      return;
    }
    if (!tracked.job || found.statuses.length > tracked.job.statuses.length) {
      tracked.job = found;
      tracked.progress = this.core.images.progressOf(found.id);
    }
    tracked.position = await this.core.images.position(found);
    this.#changed(tracked);
  }

  #heard({ job, progress }: JobEvent): void {
    const tracked = this.#tracked.get(job.id);
    if (tracked) {
      tracked.job = job;
      tracked.progress = progress;
      this.#changed(tracked);
    }
    // A job starting or ending moves the queue up. Only the replies near its front are
    // refreshed: further back the position shown when queued stays, since refreshing hundreds
    // of replies on every start would spend the request budget that results need.
    if (progress === null && job.status !== 'CREATED') {
      for (const other of this.#tracked.values()) {
        if (other === tracked || other.job?.status !== 'CREATED') continue;
        const waiting = other.job;
        this.core.images.position(waiting).then(
          (position) => {
            other.position = position;
            if (position !== undefined && position < refreshedQueuePositions) this.#changed(other);
          },
          (error: unknown) => this.logger.warn({ err: error, jobId: waiting.id }, 'reading a queue position failed'),
        );
      }
    }
  }

  #changed(tracked: Tracked): void {
    if (!tracked.job || tracked.finishing) return;
    if (isFinal(tracked.job)) {
      // Settled means refunded (failures, cancels) and the face model updated (trainings), so
      // what the message says is already true when it is read.
      if (!tracked.job.settled) return;
      const finishing = this.#finish(tracked).finally(() => this.#finishing.delete(finishing));
      this.#finishing.add(finishing);
    } else if (tracked.record.kind === 'image' && !tracked.timer && !tracked.inFlight) {
      tracked.timer = setTimeout(() => {
        tracked.timer = undefined;
        this.#scheduleEdit(tracked);
      }, this.options.showAfterMs ?? 500);
    }
  }

  /** Shows the waiting state when the pacing allows; otherwise arranges to try again. */
  #scheduleEdit(tracked: Tracked): void {
    const { job, record } = tracked;
    if (!job || tracked.finishing || tracked.inFlight || tracked.timer || !this.#replyUsable(tracked)) return;
    const view = waitingView(job, record.title, tracked.progress, job.status === 'CREATED' ? tracked.position : undefined);
    const shown = viewKey(view);
    if (shown === tracked.shown) return;
    const bucket = webhookBucket(record.applicationId, record.interactionToken);
    const ownWait = tracked.nextEditAt - this.#now();
    const wait = ownWait > 0 ? ownWait : this.pacer.claim(bucket);
    if (wait > 0) {
      tracked.timer = setTimeout(() => {
        tracked.timer = undefined;
        this.#scheduleEdit(tracked);
      }, wait);
      return;
    }
    tracked.inFlight = this.#editReply(record, view)
      .then(() => {
        tracked.shown = shown;
        this.pacer.sent(bucket);
      })
      .catch((error: unknown) => {
        // Anything but a passing failure ends the edits: the result then goes to the channel.
        if (error instanceof DiscordAPIError && error.status < 500 && error.status !== 429) tracked.replyGone = true;
        this.logger.warn({ ...failureFields(error), jobId: record.jobId }, 'progress edit failed');
      })
      .finally(() => {
        tracked.inFlight = undefined;
        tracked.nextEditAt = this.#now() + this.options.editIntervalMs;
        this.#scheduleEdit(tracked);
      });
  }

  async #finish(tracked: Tracked): Promise<void> {
    tracked.finishing = true;
    clearTimeout(tracked.timer);
    tracked.timer = undefined;
    await tracked.inFlight;
    const { record, job } = tracked;
    const log = { jobId: record.jobId, kind: record.kind, status: job?.status };
    try {
      if (job) await (record.kind === 'image' ? this.#deliverImages(tracked, job) : this.#deliverTraining(record, job));
      await this.records.remove(record.jobId);
      this.logger.info(log, 'job result delivered');
    } catch (error) {
      // Discord refusing for good (a 4xx) will not change; anything else is tried again on the next start.
      const permanent = error instanceof DiscordAPIError && error.status < 500 && error.status !== 429;
      if (permanent) await this.records.remove(record.jobId);
      this.logger.error({ ...log, ...failureFields(error), permanent }, 'could not deliver a job result');
    } finally {
      this.#tracked.delete(record.jobId);
    }
  }

  async #deliverImages(tracked: Tracked, job: JobRecord): Promise<void> {
    const { record } = tracked;
    const images = job.status === 'SUCCESS' ? await this.#readImages(job) : [];
    const view = (mention?: string) => (job.status === 'SUCCESS' ? resultView(job, record.title, images, mention) : endedView(job, record.title, mention));
    if (this.#replyUsable(tracked)) {
      try {
        await this.#editReply(record, view());
        return;
      } catch (error) {
        if (!isDiscordError(error, replyGoneCodes)) throw error;
        this.logger.info({ jobId: record.jobId, ...failureFields(error) }, 'the reply can no longer be edited; posting in the channel');
      }
    }
    await this.#post(record, view(`<@${record.userId}>`));
  }

  async #deliverTraining(record: DeliveryRecord, job: JobRecord): Promise<void> {
    await this.#post(record, { content: trainingNotice(job, record.title, `<@${record.userId}>`), components: [] });
  }

  async #readImages(job: JobRecord): Promise<OutputImage[]> {
    const images: OutputImage[] = [];
    for (const file of job.outputFiles) {
      const stored = await this.core.files.read(file.key).catch((error: unknown) => {
        if (error instanceof AppError && error.code === 'NOT_FOUND') return undefined;
        throw error;
      });
      if (stored) images.push({ file, bytes: stored.bytes });
      else this.logger.error({ jobId: job.id, key: file.key }, 'an output file is missing from storage');
    }
    return images;
  }

  /** Whether the interaction token may still be used, with room for the final upload. */
  #replyUsable(tracked: Tracked): boolean {
    return !tracked.replyGone && this.#now() < tracked.record.tokenExpiresMillis - this.options.tokenMarginMs;
  }

  async #editReply(record: DeliveryRecord, message: JobMessage): Promise<void> {
    const webhook = new InteractionWebhook(this.#requireClient(), record.applicationId, record.interactionToken);
    await webhook.editMessage('@original', { ...message, allowedMentions: { parse: [] } });
  }

  /** A new message in the job's channel mentioning its owner, or a direct message when the channel is closed. */
  async #post(record: DeliveryRecord, message: JobMessage): Promise<void> {
    const client = this.#requireClient();
    const options = { ...message, allowedMentions: { users: [record.userId] } };
    try {
      const channel = record.channelId ? await client.channels.fetch(record.channelId) : null;
      if (channel?.isSendable()) {
        await channel.send(options);
        return;
      }
    } catch (error) {
      if (!isDiscordError(error, channelClosedCodes)) throw error;
    }
    this.logger.info({ jobId: record.jobId, channelId: record.channelId }, 'cannot post in the channel; sending a direct message');
    await client.users.send(record.userId, options);
  }

  #requireClient(): Client<true> {
    if (!this.#client) throw new Error('JobDeliveries used before start()');
    return this.#client;
  }
}
