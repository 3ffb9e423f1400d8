import type { JobDelivery, JobDeliveryRepository } from '../../core/repositories.js';

/** Where and to whom a job's result goes on Discord (the core's `JobDelivery`). */
export type DeliveryRecord = JobDelivery;

/** Deliveries picked up at one start; more are left for later starts (never expected). */
const pendingLimit = 10_000;

/**
 * The deliveries promised and not yet made, kept in the database so a restart (or a job that
 * runs for hours) still ends with the result in Discord. A record is removed once delivered.
 */
export class DeliveryRecords {
  constructor(private readonly deliveries: JobDeliveryRepository) {}

  add(record: DeliveryRecord): Promise<void> {
    return this.deliveries.add(record);
  }

  get(jobId: string): Promise<DeliveryRecord | undefined> {
    return this.deliveries.get(jobId);
  }

  /** Marks the delivery done: the job's result reached Discord, or never can. */
  async remove(jobId: string): Promise<void> {
    await this.deliveries.remove(jobId);
  }

  /** Every delivery still to make, oldest first. */
  pending(): Promise<DeliveryRecord[]> {
    return this.deliveries.pending(pendingLimit);
  }
}

/** Discord's lifetime of an interaction token. */
export const interactionTokenLifetimeMs = 15 * 60_000;

/** The delivery of a job started by this interaction: to its reply while the token lasts, then to its channel. */
export function deliveryRecordFor(
  interaction: { applicationId: string; token: string; createdTimestamp: number; channelId: string | null; guildId: string | null; user: { id: string } },
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
    guildId: interaction.guildId,
    userId: interaction.user.id,
    title,
  };
}
