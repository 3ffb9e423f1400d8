import type { Accounts } from '../core/accounts.js';
import { adminActor } from '../core/actor.js';
import { AppError } from '../core/errors.js';
import type { AccountRecord } from '../core/records.js';
import type { DiscordLinkRepository } from '../core/repositories.js';

/** What the bot knows of a Discord user. */
export interface DiscordUser {
  id: string;
  username: string;
  /** A CDN URL of the user's avatar, if they have one. */
  avatarUrl: string | null;
}

/**
 * A Discord user is an account, made on first use: its username comes from the Discord name
 * (made unique with a number when taken), its picture from the Discord avatar.
 */
export class DiscordAccounts {
  /** First uses in flight in this process, so a burst of one user's messages makes one account. */
  readonly #creating = new Map<string, Promise<AccountRecord>>();

  constructor(
    private readonly links: DiscordLinkRepository,
    private readonly accounts: Accounts,
  ) {}

  async accountFor(user: DiscordUser): Promise<AccountRecord> {
    const known = await this.#existing(user);
    if (known) return known;
    const creating = this.#creating.get(user.id);
    if (creating) return creating;
    const created = this.#create(user).finally(() => this.#creating.delete(user.id));
    this.#creating.set(user.id, created);
    return created;
  }

  async #create(user: DiscordUser): Promise<AccountRecord> {
    const base = usernameBase(user.username);
    for (let attempt = 1; attempt <= 50; attempt++) {
      const suffix = attempt === 1 ? '' : `-${attempt}`;
      try {
        const { account } = await this.accounts.create(adminActor, {
          username: `${base.slice(0, 32 - suffix.length)}${suffix}`,
          profilePictureUrl: user.avatarUrl,
          tags: ['discord'],
        });
        // Bound once in the database: if another process bound this user first, its account wins.
        const bound = await this.links.bindAccount(user.id, account.id);
        return bound === account.id ? account : this.accounts.get(adminActor, bound);
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'USERNAME_TAKEN') throw error;
      }
    }
    throw new AppError('CONFLICT', `Could not find a free username for ${user.username}.`);
  }

  async #existing(user: DiscordUser): Promise<AccountRecord | undefined> {
    const accountId = await this.links.accountOf(user.id);
    if (!accountId) return undefined;
    const account = await this.accounts.get(adminActor, accountId);
    if (account.profilePictureUrl === user.avatarUrl) return account;
    // Keep the picture in step with Discord.
    return this.accounts.update(adminActor, accountId, (current) => ({ ...current, profilePictureUrl: user.avatarUrl }));
  }
}

/** Discord names allow characters our usernames do not; keep what fits, at least two characters. */
function usernameBase(name: string): string {
  const cleaned = name.normalize('NFKD').replace(/[^A-Za-z0-9_.-]+/g, '').slice(0, 32);
  return cleaned.length >= 2 ? cleaned : `user${cleaned}`;
}
