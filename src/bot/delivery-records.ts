import type { Store } from '../core/ports.js';

/** Where and to whom a job's result goes on Discord: everything needed after a restart. */
export interface DeliveryRecord {
  jobId: string;
  /** `image`: the reply to /imagine (or a re-roll) becomes the images. `training`: the owner is told the face model's fate. */
  kind: 'image' | 'training';
  /** The interaction webhook that edits the reply; its token works until `tokenExpiresMillis`. */
  applicationId: string;
  interactionToken: string;
  /** The interaction's creation plus Discord's 15 minutes. */
  tokenExpiresMillis: number;
  /** Where the result is posted as a new message once the token is no longer usable. */
  channelId: string;
  /** Who asked: mentioned in channel posts, messaged directly when the channel is gone. */
  userId: string;
  /** What the job is, as people read it: the prompt of an image, the character's name for a training. */
  title: string;
}

const recordKey = (jobId: string) => `discord-image-delivery:${jobId}`;
/** Append-only list of job ids in the order their deliveries were promised. */
const listKey = 'discord-image-deliveries';
/** Index in that list before which every delivery is done; start-up reads only what follows. */
const doneMarkKey = 'discord-image-deliveries-done';

/**
 * The deliveries promised and not yet made, kept in the store so a restart (or a job that runs
 * for hours) still ends with the result in Discord. A record is deleted once delivered; the
 * list is only ever appended to, and a mark skips its delivered head on the next start.
 */
export class DeliveryRecords {
  constructor(private readonly store: Store) {}

  async add(record: DeliveryRecord): Promise<void> {
    await this.store.set(recordKey(record.jobId), record);
    await this.store.append(listKey, () => record.jobId);
  }

  get(jobId: string): Promise<DeliveryRecord | undefined> {
    return this.store.get<DeliveryRecord>(recordKey(jobId));
  }

  /** Marks the delivery done: the job's result reached Discord, or never can. */
  async remove(jobId: string): Promise<void> {
    await this.store.delete(recordKey(jobId));
  }

  /** Every delivery still to make, oldest first; moves the mark past the delivered ones. */
  async pending(): Promise<DeliveryRecord[]> {
    const mark = (await this.store.get<number>(doneMarkKey)) ?? 0;
    const { end } = await this.store.bounds(listKey);
    const ids = await this.store.range<string>(listKey, mark, end);
    const records = await this.store.getMany<DeliveryRecord>(ids.map(recordKey));
    const firstOpen = records.findIndex((record) => record !== undefined);
    await this.store.set(doneMarkKey, firstOpen < 0 ? end : mark + firstOpen);
    return records.filter((record): record is DeliveryRecord => record !== undefined);
  }
}

/** Discord's lifetime of an interaction token. */
export const interactionTokenLifetimeMs = 15 * 60_000;

/** The delivery of a job started by this interaction: to its reply while the token lasts, then to its channel. */
export function deliveryRecordFor(
  interaction: { applicationId: string; token: string; createdTimestamp: number; channelId: string | null; user: { id: string } },
  jobId: string,
  kind: DeliveryRecord['kind'],
  title: string,
): DeliveryRecord {
  return {
    jobId,
    kind,
    applicationId: interaction.applicationId,
    interactionToken: interaction.token,
    tokenExpiresMillis: interaction.createdTimestamp + interactionTokenLifetimeMs,
    // Without a channel (an app used where the bot is not a member) the result goes by direct message.
    channelId: interaction.channelId ?? '',
    userId: interaction.user.id,
    title,
  };
}
