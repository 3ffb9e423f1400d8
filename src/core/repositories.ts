import type {
  AccountRecord,
  CharacterRecord,
  FaceModelRecord,
  JobRecord,
  JobStatus,
  JobStatusEntry,
  JobType,
  LearnedMemoryRecord,
  LearnedMemoryStatus,
  MemoryBatchRecord,
  MemoryOrigin,
  MemoryRecord,
  MessageRecord,
  TransactionRecord,
} from './records.js';
import type { Lorebook, LorebookEntry, LorebookSettings } from './lorebook/lorebook.js';
import type { StoredFile } from './ports.js';

/**
 * Repository ports: persistence per aggregate, in domain types. Each adapter holds every
 * invariant named here in the database itself, so it holds across any number of processes;
 * nothing is cached except what cannot change. The core makes ids and timestamps (its clock);
 * the database gives only what needs one agreed answer (message and queue order).
 *
 * Errors: `USERNAME_TAKEN`, `BALANCE_INSUFFICIENT`, `NOT_FOUND` and `CONFLICT` as `AppError`.
 */

// ---------------------------------------------------------------------------------------------
// Accounts

/** Everything a new account starts with, written in one transaction or not at all. */
export interface NewAccountRecords {
  account: AccountRecord;
  /** The account's own character (`account.characterId`). */
  character: CharacterRecord;
  /** SHA-256 (hex) of the first API key; keys are high-entropy, so no slow hash is needed. */
  apiKeyHash: string;
  /** The starting credit, or null for none. */
  startingCredit: TransactionRecord | null;
}

export interface AccountRepository {
  /** Creates the account, its character, its key and its credit at once; `USERNAME_TAKEN` ignores case. */
  create(records: NewAccountRecords): Promise<AccountRecord>;
  get(accountId: string): Promise<AccountRecord | undefined>;
  findByUsername(username: string): Promise<AccountRecord | undefined>;
  /** Accounts in creation order, `limit` after the cursor this call returned last. */
  list(page: { limit: number; cursor?: string | undefined }): Promise<{ items: AccountRecord[]; nextCursor: string | null }>;
  /** Replaces the stored fields of the account (not its username or character); `NOT_FOUND` if absent. */
  update(account: AccountRecord): Promise<AccountRecord>;
  /**
   * Who holds the key of this hash, or undefined (revoked or never issued): read on every
   * request, so just what authentication needs.
   */
  keyHolder(keyHash: string): Promise<{ accountId: string; isDisabled: boolean } | undefined>;
  /** Stores a new key and revokes every earlier key of the account, in one transaction. */
  rotateApiKey(accountId: string, keyHash: string, createdMillis: number): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Characters and memories

export interface CharacterRepository {
  /** Characters are created with their account (`AccountRepository.create`) or here. */
  create(character: CharacterRecord): Promise<CharacterRecord>;
  get(characterId: string): Promise<CharacterRecord | undefined>;
  /**
   * Inside `RepositoryStore.transaction`: the character, its row held until the transaction
   * ends, so a change to it (made private, deleted) waits for what is written under the check
   * of what it was.
   */
  hold(characterId: string): Promise<CharacterRecord | undefined>;
  /** Replaces the character's fields; `NOT_FOUND` if absent. */
  update(character: CharacterRecord): Promise<CharacterRecord>;
  /**
   * Autocomplete: the characters of `accountId` whose name contains `query` (any case), then
   * public characters whose name starts with it, at most `limit`, each an indexed query.
   * Without `accountId` (the admin) every character whose name starts with it.
   */
  search(query: string, options: { accountId: string | null; limit: number }): Promise<CharacterRecord[]>;
  /**
   * Creates a character unless its account already has `maxPerAccount` (deleted ones not
   * counted); then `CHARACTER_LIMIT_REACHED`. Counting and inserting hold the account's row, so
   * concurrent creations in any process never pass the limit.
   */
  createWithin(character: CharacterRecord, maxPerAccount: number): Promise<CharacterRecord>;
  /**
   * A page of characters, by name then id: without `publicQuery`, those of `accountId`; with it,
   * those of `accountId` whose name contains it, then public ones of others whose name starts
   * with it. Deleted characters are never listed. `cursor` is one this method gave out.
   */
  list(options: CharacterListOptions): Promise<CharacterPage>;
  /**
   * Deletes what belongs to a character (memories written and learned, lorebook, face models,
   * its places in Discord casts and DM choices) and keeps its row, scrubbed to its name, marked
   * deleted at `deletedMicros`, in one transaction. Answers the file keys it let go of (its
   * avatar, its face models' archives), which something else may still hold.
   */
  purge(characterId: string, deletedMicros: number): Promise<string[]>;
  /** How many characters (not deleted) the account holds. */
  countOwned(accountId: string): Promise<number>;
}

/**
 * Files let go of, removed by a sweep only once nothing has held them for a grace period.
 * Files are content-addressed: the same bytes stored again (the same card imported) share the
 * key, and the one storing them references the file only some time after it was told the file
 * is there. A deletion that checked and removed at once could remove it in between.
 */
export interface FileReleaseRepository {
  /**
   * Records that these files may be held no more (by `accountId`'s image jobs, nor any row),
   * from `releasedMicros`. Inside the transaction that let go of them, so none is forgotten.
   */
  release(keys: readonly string[], accountId: string, releasedMicros: number): Promise<void>;
  /**
   * The file `key` is being stored again, to be referenced: a release of it starts anew at
   * `nowMicros`. Must come before the file is looked for on disk: a sweep removing the file
   * holds its release until it is gone, so this then waits and the store writes it again.
   */
  renew(key: string, nowMicros: number): Promise<void>;
  /**
   * Inside `RepositoryStore.transaction`: takes up to `limit` releases from before
   * `releasedBeforeMicros` (each by one caller only, across processes) and answers how many,
   * and the keys of those no row holds now. The taken releases are held until the transaction
   * ends: remove the files before it commits.
   */
  takeUnheld(releasedBeforeMicros: number, limit: number): Promise<{ taken: number; unheld: string[] }>;
  /**
   * Of `keys`, files found on disk, records a release from `nowMicros` (of no one's: every
   * account's image jobs are looked at when it is due) of each that no character, message, face
   * model or spoken audio holds and no release records yet, and answers those: what a process
   * killed between storing a file and referencing it left. Image jobs are not looked at here
   * (see `heldByJobs`); the sweep looks at everything again before it removes a file.
   */
  adoptUnheld(keys: readonly string[], nowMicros: number): Promise<string[]>;
  /** The keys of every image job's outputs and photos, read once for a whole scan of the files. */
  heldByJobs(): Promise<Set<string>>;
}

/** An audio spoken and kept to be reused, and who owns the character that spoke it. */
export interface SpeechAudioRecord {
  file: StoredFile;
  accountId: string;
}

/**
 * Spoken audio kept to be reused: the same engine, voice and text (their `hash`) are spoken
 * once. A row holds its file; the sweep takes the rows to let go of, then releases their files.
 */
export interface SpeechAudioRepository {
  /** The audio kept for `hash`, now asked for again at `nowMicros` (its retention starts anew). */
  use(hash: string, nowMicros: number): Promise<StoredFile | undefined>;
  /** Keeps an audio just stored; the same hash recorded again (another process) is the newer. */
  record(hash: string, audio: SpeechAudioRecord, nowMicros: number): Promise<void>;
  /**
   * Removes up to `limit` audios, and answers them: first those last asked for before
   * `usedBeforeMicros`, then, while those left are together over `maxBytes`, the ones asked for
   * longest ago. Inside the transaction that releases their files. Two sweepers at once
   * answer each audio to one of them.
   */
  takeExpired(usedBeforeMicros: number, maxBytes: number, limit: number): Promise<Array<{ fileKey: string; accountId: string }>>;
}

export interface CharacterListOptions {
  accountId: string;
  publicQuery?: string;
  limit: number;
  cursor?: string;
}

export interface CharacterPage {
  characters: CharacterRecord[];
  nextCursor: string | null;
}

/** A character's lorebook: its settings and its entries, in the order they were added. */
export interface LorebookRepository {
  /** The book; with default settings and no entries when the character has none. */
  get(characterId: string): Promise<Lorebook>;
  /**
   * Inside `transaction`: holds the character's book until the transaction ends, so reading it,
   * changing it and writing it back is never interleaved with another process doing the same.
   * `NOT_FOUND` when the character does not exist.
   */
  lock(characterId: string): Promise<void>;
  /** `NOT_FOUND` when the character does not exist. */
  setSettings(characterId: string, settings: LorebookSettings): Promise<void>;
  /** Adds an entry unless the book already holds `maxEntries`; then `CONFLICT`. */
  addEntry(characterId: string, entry: LorebookEntry, maxEntries: number): Promise<LorebookEntry>;
  /** Replaces an entry's fields; `NOT_FOUND` when the book has no such entry. */
  updateEntry(characterId: string, entry: LorebookEntry): Promise<LorebookEntry>;
  /** False when the book had no such entry. */
  removeEntry(characterId: string, entryId: string): Promise<boolean>;
  /** Replaces the whole book (an imported card's), in one transaction. */
  replace(characterId: string, lorebook: Lorebook): Promise<void>;
  /** Records that the alternative `alternativeId` of the reply `messageId` was written with `entryIds`. */
  recordUse(messageId: string, alternativeId: string, entryIds: readonly string[]): Promise<void>;
  /** The entry ids that alternative of the reply was written with, in the order let in; none once the reply is gone. */
  usedBy(messageId: string, alternativeId: string): Promise<string[]>;
}

export interface MemoryRepository {
  /** The character's memories, oldest first. */
  list(characterId: string): Promise<MemoryRecord[]>;
  /** Adds a memory unless the character already holds `maxCount`; then `CONFLICT`. */
  add(characterId: string, memory: MemoryRecord, maxCount: number): Promise<MemoryRecord>;
  /** Removes a memory; false when it did not exist. */
  remove(characterId: string, memoryId: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Conversations and messages

/** A conversation as stored, with the summary of its older messages once one is made. */
export interface StoredConversation {
  id: string;
  accountId: string;
  characterId: string;
  createdMicros: number;
  updatedMicros: number;
  /** A summary of the messages up to and including `summaryThroughPosition`, or null. */
  summary: string | null;
  summaryThroughPosition: number | null;
}

/** One of a character message's alternatives (a swipe): each reply written for that place. */
export interface MessageAlternative {
  /**
   * Its own id, under which what it was written with is kept (the memories it used). The
   * first alternative's is the message's own id; a migrated chain of replies keeps each reply's.
   */
  id: string;
  content: string;
  finishReason?: string;
  createdMicros: number;
}

/** A message as stored: its place in the conversation and its alternatives. */
export interface StoredMessage extends MessageRecord {
  conversationId: string;
  /** Given by the database at append: every process agrees on it; later messages have larger ones. */
  position: number;
  /**
   * Every text written for this place, oldest first: one for a person's message, several for a
   * character's message that was regenerated (or opened with alternate greetings).
   */
  alternatives: readonly MessageAlternative[];
  /**
   * Which alternative the conversation goes on from; `content` and `finishReason` are that one's,
   * so the prompt, the summary and learning read the chosen one without asking.
   */
  chosenIndex: number;
  /** A character's greeting (opening or scene): its alternatives are swiped, never regenerated. */
  greeting?: true;
}

/**
 * What a caller gives to append; the database gives the position. `alternatives` (with
 * `chosenIndex`) for a character's message written with several at once, such as a greeting and
 * its alternates: `content` and `finishReason` are then taken from the chosen one.
 */
export type NewStoredMessage = MessageRecord & { alternatives?: readonly MessageAlternative[]; chosenIndex?: number; greeting?: boolean };

export interface MessageRange {
  /** Only messages with a position greater than this. */
  afterPosition?: number;
  /** Only messages with a position smaller than this. */
  beforePosition?: number;
  /** At most this many: the oldest ones, or the newest ones when `newest` is true (still returned oldest first). */
  limit?: number;
  newest?: boolean;
}

/** A conversation with who takes part in it, and how far its messages go. */
export interface ConversationState {
  conversation: StoredConversation;
  character: CharacterRecord;
  speakers: AccountRecord[];
  /** The characters of the conversation in the order they joined; its own character first. */
  characters: CharacterRecord[];
  /** The newest message's position; null when there is none. */
  lastPosition: number | null;
  /**
   * Names the newest message's alternatives and choice (`count:chosen`), which change without a
   * new position (a swipe, a regenerated reply); with `lastPosition` it fixes the listed messages.
   */
  newestRevision: string | null;
}

/**
 * A conversation's messages as of `lastPosition` and `newestRevision`. Positions are never
 * reused, messages are deleted only all at once (a clear), and only the newest message may
 * gain or change its chosen alternative, so the same two always mean the same list: a snapshot
 * never goes stale, it is only replaced.
 */
export interface MessageSnapshot {
  lastPosition: number | null;
  newestRevision: string | null;
  messages: StoredMessage[];
}

export interface ConversationRepository {
  create(conversation: StoredConversation, firstSpeakerAccountId: string): Promise<StoredConversation>;
  get(conversationId: string): Promise<StoredConversation | undefined>;
  /**
   * The conversations the account speaks in, the one it joined last first, `limit` at a time;
   * `cursor` is one this method gave out.
   */
  listFor(accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ conversations: StoredConversation[]; nextCursor: string | null }>;
  /** Speaker account ids in the order they joined; the opener first. */
  speakers(conversationId: string): Promise<string[]>;
  /** Adds a speaker; false when it already was one. */
  addSpeaker(conversationId: string, accountId: string, joinedMicros: number): Promise<boolean>;
  /** Takes a speaker out (their messages stay); false when it was none. The opener is the caller's to protect. */
  removeSpeaker(conversationId: string, accountId: string): Promise<boolean>;
  /** Character ids of the conversation in the order they joined; its own character first. */
  characters(conversationId: string): Promise<string[]>;
  /** Puts a character into the conversation (a scene); false when it already was in it. */
  addCharacter(conversationId: string, characterId: string, joinedMicros: number): Promise<boolean>;
  /**
   * Takes a character out of the conversation; false when it was not in it. Its messages stay.
   * The conversation's own character is the caller's to protect (the core refuses it).
   */
  removeCharacter(conversationId: string, characterId: string): Promise<boolean>;
  /** Stores the message once (with its alternatives, if given), after every message appended before it in any process. */
  append(conversationId: string, message: NewStoredMessage): Promise<StoredMessage>;
  /**
   * Adds an alternative to a character's message and chooses it, in one transaction that holds
   * the conversation: concurrent additions each get their own index, none lost. Only while the
   * message is the conversation's newest, until it commits: an append in flight in any process
   * is waited for (`NOT_NEWEST_REPLY` then; `NOT_FOUND` when the message is not there).
   */
  addAlternative(conversationId: string, messageId: string, alternative: MessageAlternative): Promise<StoredMessage>;
  /**
   * Chooses one of the message's alternatives (`VALIDATION_FAILED` for an index out of range),
   * under the same rule as `addAlternative`.
   */
  chooseAlternative(conversationId: string, messageId: string, index: number): Promise<StoredMessage>;
  /** Messages oldest first, in position order. */
  messages(conversationId: string, range?: MessageRange): Promise<StoredMessage[]>;
  /**
   * What a conversation read shows, in one round trip: the conversation, its character, its
   * speakers' accounts and its characters in the order they joined, and the position and
   * revision of its newest message (null when it has none).
   */
  state(conversationId: string): Promise<ConversationState | undefined>;
  /**
   * The messages (oldest first) and the last position and newest revision they were read at,
   * read in one transaction, so they always agree.
   */
  snapshot(conversationId: string): Promise<MessageSnapshot>;
  /** The newest message, if any. */
  lastMessage(conversationId: string): Promise<StoredMessage | undefined>;
  countMessages(conversationId: string): Promise<number>;
  /** Deletes every message; later appends continue with larger positions. Drops the summary. */
  clear(conversationId: string, updatedMicros: number): Promise<void>;
  /** Stores a summary of the messages through `throughPosition`. */
  setSummary(conversationId: string, summary: string | null, throughPosition: number | null): Promise<void>;
}

/** An invitation to speak in a conversation, waiting for the invited account to accept or decline it. */
export interface ConversationInvitation {
  conversationId: string;
  /** Who is invited. */
  accountId: string;
  invitedByAccountId: string;
  createdMicros: number;
}

/** Invitations to conversations: nobody is made a speaker by someone else without saying yes. */
export interface ConversationInvitationRepository {
  /**
   * Stores the invitation unless the invited account already has `maxPending` waiting (then
   * `INVITATION_LIMIT_REACHED`); one already waiting for that conversation is answered as it
   * is. Counting and inserting hold the invited account's row, so concurrent invitations from
   * any process never pass the limit.
   */
  invite(invitation: ConversationInvitation, maxPending: number): Promise<ConversationInvitation>;
  /** The account's invitations waiting, oldest first. */
  listFor(accountId: string): Promise<ConversationInvitation[]>;
  /** Makes the invited account a speaker and removes the invitation, in one transaction; false when there was none. */
  accept(conversationId: string, accountId: string, joinedMicros: number): Promise<boolean>;
  /** Removes the invitation (declined or withdrawn); false when there was none. */
  remove(conversationId: string, accountId: string): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Ledger

export interface LedgerRepository {
  /**
   * The balance: one indexed read, kept in step with the ledger by every write in the same
   * transaction.
   */
  balance(accountId: string): Promise<number>;
  /** The account's transactions, oldest first. */
  transactions(accountId: string): Promise<TransactionRecord[]>;
  credit(transaction: TransactionRecord): Promise<TransactionRecord>;
  /** Writes the debit only if the balance covers it, atomically; else `BALANCE_INSUFFICIENT`. */
  debit(transaction: TransactionRecord): Promise<TransactionRecord>;
  /** The debit that paid for `reference`, if one was made. */
  debitFor(accountId: string, reference: string): Promise<TransactionRecord | undefined>;
  /**
   * Gives a debit back once: `refund.refundOf` names the debit, and a second refund of it
   * returns the first. `NOT_FOUND` for an unknown debit, `CONFLICT` for a non-debit.
   */
  refund(refund: TransactionRecord): Promise<TransactionRecord>;
}

// ---------------------------------------------------------------------------------------------
// Jobs and face models

export interface ClaimOptions {
  workerId: string;
  types: readonly JobType[];
  nowMillis: number;
  leaseMs: number;
  /** At most this many live leases of a type, counted over every worker. */
  limits?: Partial<Record<JobType, number>>;
}

/** A job claimed by one worker until `leaseExpiresMillis`, unless renewed. */
export interface ClaimedJob {
  job: JobRecord;
  /** The queue order: the database's, agreed by every process. */
  position: number;
  leaseOwner: string;
  leaseExpiresMillis: number;
  /** How many times the job has been claimed, this claim included. */
  claims: number;
}

export interface JobRepository {
  /**
   * Stores a new job (status `CREATED`, unsettled) at the end of the work queue. Create it in
   * the same `transaction` as its debit, so no worker ever claims an unpaid job.
   */
  create(job: JobRecord): Promise<JobRecord>;
  get(jobId: string): Promise<JobRecord | undefined>;
  /** The account's jobs, newest first, `limit` at a time; the cursor comes from the last page. */
  listFor(accountId: string, page: { limit: number; cursor?: string | undefined }): Promise<{ jobs: JobRecord[]; nextCursor: string | null }>;
  /** Deletes a job that was never charged (its debit was refused). */
  deleteUncharged(jobId: string): Promise<boolean>;
  /** How many jobs there are by type and status, and how many wait unclaimed (for metrics). */
  census(): Promise<{ counts: Array<{ type: JobType; status: JobStatus; count: number }>; waiting: number }>;
  /**
   * Gives the oldest unsettled job of one of `types` whose lease is free or expired to exactly
   * one caller, leased to `workerId` until `nowMillis + leaseMs`. Final unsettled jobs are
   * claimed too, so that whoever takes them over settles them. With `limits`, a type is
   * skipped while that many of its jobs are held under live leases by all workers together
   * (the engines' concurrency, across every process).
   */
  claim(options: ClaimOptions): Promise<ClaimedJob | undefined>;
  /** Extends the lease; false when the worker no longer holds it (expired and taken over). */
  renewLease(jobId: string, workerId: string, nowMillis: number, leaseMs: number): Promise<boolean>;
  /** Lets the lease go, so another worker may claim the job at once. */
  releaseLease(jobId: string, workerId: string): Promise<void>;
  /**
   * Moves a job to `status` with a history entry, unless it is already final: the first final
   * status wins and the loser gets undefined.
   */
  transition(jobId: string, entry: JobStatusEntry, change?: JobChange): Promise<JobRecord | undefined>;
  /** Changes fields that do not move the status (outputs, external id, feedback). */
  update(jobId: string, change: JobChange | ((job: JobRecord) => JobChange)): Promise<JobRecord>;
  /** Marks a final job settled; true only for the one caller that did it. Frees the lease. */
  settle(jobId: string): Promise<boolean>;
  /** The status history, newest first (as `JobRecord.statuses`). */
  statuses(jobId: string): Promise<JobStatusEntry[]>;
  /**
   * How many jobs of its type wait (CREATED, unclaimed) ahead of a waiting job in the queue
   * every process shares; undefined when the job itself no longer waits.
   */
  waitingAhead(jobId: string, nowMillis: number): Promise<number | undefined>;
}

/** The fields of a job that change after it is made. */
export type JobChange = Partial<
  Pick<JobRecord, 'outputFiles' | 'transactionId' | 'externalId' | 'startedMillis' | 'failure' | 'faceModel'>
>;

export interface FaceModelRepository {
  create(faceModel: FaceModelRecord): Promise<FaceModelRecord>;
  get(faceModelId: string): Promise<FaceModelRecord | undefined>;
  /** The character's face models, oldest first. */
  listFor(characterId: string): Promise<FaceModelRecord[]>;
  update(faceModel: FaceModelRecord): Promise<FaceModelRecord>;
}

// ---------------------------------------------------------------------------------------------
// Discord

/** Where a conversation lives on Discord; `guildId` null for a DM. */
export interface DiscordChannelLink {
  conversationId: string;
  channelId: string;
  guildId: string | null;
}

export interface DiscordLinkRepository {
  forChannel(channelId: string): Promise<DiscordChannelLink | undefined>;
  forConversation(conversationId: string): Promise<DiscordChannelLink | undefined>;
  link(link: DiscordChannelLink): Promise<void>;
  followers(channelId: string): Promise<string[]>;
  setFollowing(channelId: string, discordUserId: string, on: boolean): Promise<void>;
  dmCharacter(discordUserId: string): Promise<string | undefined>;
  chooseDmCharacter(discordUserId: string, characterId: string): Promise<void>;
  dmConversation(discordUserId: string, characterId: string): Promise<string | undefined>;
  setDmConversation(discordUserId: string, characterId: string, conversationId: string): Promise<void>;
  /** Whether the character answers a voice message in this conversation with a voice message of its own (off by default). */
  voiceReplies(conversationId: string): Promise<boolean>;
  setVoiceReplies(conversationId: string, on: boolean): Promise<void>;
  /** The account a Discord user was given on first use. */
  accountOf(discordUserId: string): Promise<string | undefined>;
  /** Binds a Discord user to an account once; answers the account bound first. */
  bindAccount(discordUserId: string, accountId: string): Promise<string>;
}

/** A server channel where characters speak when addressed (`/channel characters`). */
export interface DiscordCharacterChannel {
  channelId: string;
  guildId: string;
  /** The channel's one conversation, made when its first character was added; kept if all leave. */
  conversationId: string;
  /** Whether messages that address no character are kept as context (never answered). */
  listen: boolean;
  /** The characters that may speak there, in the order they were added; none: characters are off. */
  characterIds: string[];
}

export interface DiscordChannelRepository {
  get(channelId: string): Promise<DiscordCharacterChannel | undefined>;
  /** The server of the character channel whose conversation this is, if it is one. */
  guildOfConversation(conversationId: string): Promise<string | undefined>;
  /** A guild's channels with at least one character, in no particular order. */
  inGuild(guildId: string): Promise<DiscordCharacterChannel[]>;
  /**
   * Lets a character speak in a channel. The first call for a channel stores `conversationId`;
   * later ones keep the stored one, which is returned with the channel.
   */
  addCharacter(channel: { channelId: string; guildId: string; conversationId: string }, characterId: string, addedMillis: number): Promise<DiscordCharacterChannel>;
  /** False when the character was not there. */
  removeCharacter(channelId: string, characterId: string): Promise<boolean>;
  /** False when the channel has never had characters. */
  setListen(channelId: string, listen: boolean): Promise<boolean>;
  /** Remembers that these Discord messages are a character's words (a reply, in one or more parts). */
  recordCharacterMessages(messageIds: readonly string[], characterId: string, createdMillis: number): Promise<void>;
  /** The character who wrote a message the bot posted, if any. */
  characterOfMessage(messageId: string): Promise<string | undefined>;
  /**
   * Remembers that these messages, in order, show one reply of the character, its buttons under
   * the last; a message recorded in another reply before is this one's now.
   */
  recordReplyMessages(messageIds: readonly string[], characterId: string, createdMillis: number): Promise<void>;
  /** The messages of the reply whose buttons are under `messageId`, in order and ending with it; just it when none were recorded (or forgotten). */
  replyMessages(messageId: string): Promise<string[]>;
  /** Forgets who wrote messages recorded before `createdMillis`, at most `limit` of them; how many were forgotten. */
  forgetCharacterMessages(createdMillis: number, limit: number): Promise<number>;
}

/** A server's rules for characters listening in its voice calls (`/voice listening`). */
export interface DiscordVoiceGuildRules {
  guildId: string;
  /** False when a manager forbade listening in the whole server. */
  listening: boolean;
  /** Voice channels of the server where listening is forbidden, in no particular order. */
  forbiddenChannelIds: string[];
  /** The server's own turn thresholds; null: the configured defaults. */
  silenceMs: number | null;
  minimumSpeechMs: number | null;
}

/** A change of a server's thresholds: a number sets one, null goes back to the default, undefined keeps it. */
export interface DiscordVoiceTuning {
  silenceMs?: number | null | undefined;
  minimumSpeechMs?: number | null | undefined;
}

/**
 * Who may be heard in voice calls, held by the database so every process and shard sees one
 * answer and it survives restarts: where managers forbade listening, who opted out with
 * `/voice ignore me` (by Discord user id, in every server), and each server's thresholds.
 */
export interface DiscordVoiceRuleRepository {
  /** A server's rules; a server never configured allows listening everywhere with the defaults. */
  guild(guildId: string): Promise<DiscordVoiceGuildRules>;
  /** Where listening is forbidden for a call in `channelId`: the whole server, that channel, or nowhere. */
  forbidden(guildId: string, channelId: string): Promise<'server' | 'channel' | undefined>;
  /** Allows or forbids listening in a whole server, or (with `channelId`) in one of its voice channels. */
  setListening(place: { guildId: string; channelId?: string | undefined }, allowed: boolean): Promise<void>;
  /** Changes a server's thresholds (see `DiscordVoiceTuning`); answers its rules after the change. */
  tune(guildId: string, tuning: DiscordVoiceTuning): Promise<DiscordVoiceGuildRules>;
  /** Whether the Discord user opted out of being heard. */
  ignores(discordUserId: string): Promise<boolean>;
  setIgnored(discordUserId: string, ignored: boolean): Promise<void>;
}

/** Where and to whom a job's result goes on Discord: everything needed after a restart. */
export interface JobDelivery {
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
  /** The guild of that channel, null for a DM: a sharded bot delivers from the shard that holds it. */
  guildId: string | null;
  /** Who asked: mentioned in channel posts, messaged directly when the channel is gone. */
  userId: string;
  /** What the job is, as people read it: the prompt of an image, the character's name for a training. */
  title: string;
}

export interface JobDeliveryRepository {
  add(delivery: JobDelivery): Promise<void>;
  get(jobId: string): Promise<JobDelivery | undefined>;
  /** Marks the delivery done; true for the one caller that did it. */
  remove(jobId: string): Promise<boolean>;
  /** Deliveries still to make, oldest first. */
  pending(limit: number): Promise<JobDelivery[]>;
}

// ---------------------------------------------------------------------------------------------
// Facts

/** Small durable facts the service learns (e.g. "model X cannot see images"), as JSON values. */
export interface FactRepository {
  get<T>(key: string): Promise<T | undefined>;
  set<T>(key: string, value: T): Promise<void>;
  delete(key: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------
// Learned memories (issue 21)

/**
 * Facts characters learned from conversations. Deduplication and supersession hold in the
 * database: one non-superseded memory per (character, subject, kind, normalised text), where
 * the normalised text is lower case with runs of spaces and the end's punctuation removed.
 */
export interface LearnedMemoryRepository {
  /**
   * Stores `memory` unless one of the same character, subject, kind and normalised text exists
   * that is not superseded (active, pending or rejected): then that one is answered, `created` false.
   */
  add(memory: LearnedMemoryRecord): Promise<{ memory: LearnedMemoryRecord; created: boolean }>;
  get(memoryId: string): Promise<LearnedMemoryRecord | undefined>;
  /**
   * Active `person` memories `characterId` holds about `subjectAccountId`, newest first; only
   * those learned in one of `origins` when given.
   */
  usableAbout(characterId: string, subjectAccountId: string, origins?: readonly MemoryOrigin[]): Promise<LearnedMemoryRecord[]>;
  /**
   * The same memories as `usableAbout`, with only what ranking and a prompt need: read before
   * every reply, so a person with a thousand memories costs a millisecond, not several.
   */
  recallable(characterId: string, subjectAccountId: string, origins?: readonly MemoryOrigin[]): Promise<RecallableMemory[]>;
  /** What every character (or one) learned about a person, active and superseded, newest first. */
  about(subjectAccountId: string, options?: { characterId?: string | undefined }): Promise<LearnedMemoryRecord[]>;
  /** A character's own learned memories with one of `statuses`, newest first. */
  own(characterId: string, statuses: readonly LearnedMemoryStatus[]): Promise<LearnedMemoryRecord[]>;
  /**
   * In one transaction: marks `oldMemoryId` superseded at `nowMicros` by `replacement` and stores
   * the replacement (active). `NOT_FOUND` when the old one is not there or already superseded.
   */
  supersede(oldMemoryId: string, replacement: LearnedMemoryRecord, nowMicros: number): Promise<LearnedMemoryRecord>;
  /**
   * Makes a pending (or active) memory active and, in the same transaction, supersedes the
   * active memory it `replaces` (kept with the time it stopped being true); undefined when the
   * memory is not there or neither pending nor active.
   */
  approve(memoryId: string, nowMicros: number): Promise<LearnedMemoryRecord | undefined>;
  /** Sets a memory's status (approve: `active`; reject: `rejected`); false when it is not there. */
  setStatus(memoryId: string, status: LearnedMemoryStatus, nowMicros: number): Promise<boolean>;
  /**
   * Deletes for good what is known about a person: one memory, every memory one character
   * holds, or all (and the memories they superseded); answers how many rows went.
   */
  deleteAbout(subjectAccountId: string, filter?: { memoryId?: string | undefined; characterId?: string | undefined }): Promise<number>;
}

/** Which memories (written or learned) each reply was written with. */
export interface ReplyMemoryRepository {
  /** Records that the alternative `alternativeId` of the reply `messageId` (stored) was written with `memoryIds`. */
  record(messageId: string, alternativeId: string, memoryIds: readonly string[]): Promise<void>;
  /** The memory ids that alternative of the reply was written with, in the order recorded; none once the reply is gone. */
  of(messageId: string, alternativeId: string): Promise<string[]>;
  /** Drops every record of these memories (they were deleted): no reply points to them any more. */
  forget(memoryIds: readonly string[]): Promise<void>;
}

/** A learned memory as recall ranks it and a prompt shows it. */
export type RecallableMemory = Pick<LearnedMemoryRecord, 'id' | 'subjectAccountId' | 'text' | 'importance' | 'statedMicros' | 'origin'>;

/** The queue of messages to learn from: each batch claimed and run by one process at a time. */
export interface MemoryBatchRepository {
  /**
   * Queues the conversation's messages after the last queued one through `throughPosition`,
   * in one transaction (so two processes queueing at once make one batch); undefined when
   * nothing new is there. `runAfterMillis` lets a conversation go quiet first.
   */
  enqueue(conversationId: string, throughPosition: number, batch: Pick<MemoryBatchRecord, 'id' | 'createdMicros' | 'runAfterMillis'>): Promise<MemoryBatchRecord | undefined>;
  /** The next due batch (queued and due, or running with its lease run out), leased to `workerId`. */
  claim(options: { workerId: string; nowMillis: number; leaseMs: number }): Promise<MemoryBatchRecord | undefined>;
  /** Done, if `workerId` still holds it; false when it lost the lease. */
  complete(batchId: string, workerId: string): Promise<boolean>;
  /** Back to the queue after a failure, due at `runAfterMillis`, attempts counted; false when the lease was lost. */
  retry(batchId: string, workerId: string, runAfterMillis: number, error: string): Promise<boolean>;
  /** Extends a lease `workerId` still holds to `nowMillis + leaseMs`; false when it was lost (or ran out). */
  renew(batchId: string, workerId: string, nowMillis: number, leaseMs: number): Promise<boolean>;
  /** The characters whose part of the batch is done: their facts are stored. */
  doneCharacters(batchId: string): Promise<string[]>;
  /**
   * Marks `characterId`'s part of the batch done if `workerId` still holds the lease at
   * `nowMillis`; false when the lease was lost (or the part was already done). Called inside
   * `RepositoryStore.transaction` with the stores of that character's facts, it makes them one:
   * a worker that lost its lease stores nothing, and no part is stored twice.
   */
  finishCharacter(batchId: string, characterId: string, workerId: string, nowMillis: number, nowMicros: number): Promise<boolean>;
  /**
   * Deletes done batches created before `createdBeforeMicros`, except each conversation's
   * newest (where its next batch starts); answers how many went.
   */
  pruneDone(createdBeforeMicros: number, limit?: number): Promise<number>;
  get(batchId: string): Promise<MemoryBatchRecord | undefined>;
  /**
   * Marks a stored message as one nothing is learned from (memory-scope.ts, rule 7; or said while
   * learning was off), or with `characterIds`, one those characters learn nothing from (its
   * author had learning off for them); it goes with the message.
   */
  markUnlearned(messageId: string, characterIds?: readonly string[]): Promise<void>;
  /** Those of `messageIds` marked as nothing to learn from. */
  unlearned(messageIds: readonly string[]): Promise<Set<string>>;
  /** Those of `messageIds` marked for some characters only, with those characters. */
  unlearnedBy(messageIds: readonly string[]): Promise<Map<string, Set<string>>>;
  /**
   * Adds `tokens` to what extraction spent for `characterId` on `day` (YYYY-MM-DD) unless that
   * would pass `limit`; atomic across processes. Answers whether they fit.
   */
  spend(characterId: string, day: string, tokens: number, limit: number): Promise<boolean>;
}

/** Tokens of one extraction request: the character's, and each person's share (their lines'). */
export interface LearningSpending {
  characterId: string;
  tokens: number;
  people: ReadonlyArray<{ accountId: string; tokens: number }>;
}

/** Whose daily budget a reservation did not fit: the character's, and which people's. */
export type LearningReservation = { reserved: true } | { reserved: false; character: boolean; people: string[] };

/** What learning keeps per person and character: their share of its daily budget, and that they were told it learns. */
export interface LearningPerPersonRepository {
  /**
   * Adds `spending` to what was spent on `day` (YYYY-MM-DD), for the character within
   * `limits.character` and for each person within `limits.person`: all of it or none, atomically
   * across processes. Not inside a transaction (a short one rolls its own back).
   */
  reserve(day: string, spending: LearningSpending, limits: { character: number; person: number }): Promise<LearningReservation>;
  /** Adds `spending` (negative where the engine reported less than reserved) whatever the limits; never below zero. */
  correct(day: string, spending: LearningSpending): Promise<void>;
  /** Tokens spent on `day` for the character, or for one person's lines with it. */
  spent(day: string, characterId: string, accountId?: string): Promise<number>;
  /** Records that `accountId` was told `characterId` learns from them: true for the first call only, across processes. */
  tellOnce(accountId: string, characterId: string, nowMicros: number): Promise<boolean>;
}

// ---------------------------------------------------------------------------------------------
// Signals between processes

/**
 * Tells every process that a job changed, so one waiting on it (a synchronous image request,
 * a Discord delivery) wakes without polling the job. Sent inside a transaction, it is heard
 * only if and when the transaction commits.
 */
export interface SignalRepository {
  jobChanged(jobId: string): Promise<void>;
}

// ---------------------------------------------------------------------------------------------

/** Every repository, bound to one connection pool or to one transaction. */
export interface Repositories {
  accounts: AccountRepository;
  characters: CharacterRepository;
  memories: MemoryRepository;
  conversations: ConversationRepository;
  invitations: ConversationInvitationRepository;
  ledger: LedgerRepository;
  jobs: JobRepository;
  faceModels: FaceModelRepository;
  discordLinks: DiscordLinkRepository;
  discordChannels: DiscordChannelRepository;
  discordVoiceRules: DiscordVoiceRuleRepository;
  jobDeliveries: JobDeliveryRepository;
  facts: FactRepository;
  signals: SignalRepository;
  learnedMemories: LearnedMemoryRepository;
  memoryBatches: MemoryBatchRepository;
  learningPerPerson: LearningPerPersonRepository;
  lorebooks: LorebookRepository;
  replyMemories: ReplyMemoryRepository;
  fileReleases: FileReleaseRepository;
  speechAudio: SpeechAudioRepository;
}

/** The store: repositories, and transactions across them. */
export interface RepositoryStore extends Repositories {
  /**
   * Runs `work` with repositories bound to one database transaction: everything it writes is
   * committed together, or nothing when it throws. Calls on the given repositories inside a
   * repository method's own transaction join this one.
   */
  transaction<T>(work: (repositories: Repositories) => Promise<T>): Promise<T>;
  /**
   * Hears `signals.jobChanged` from every process, this one included, promptly but at most
   * once per signal and not across restarts (read the job itself for its state). Returns the
   * way to stop listening.
   */
  onJobChanged(listener: (jobId: string) => void): () => void;
  /**
   * A token that differs from every earlier one once anything was committed to the database,
   * by any process, this one included; cheap enough to take on every request. What is read
   * after taking it is at least as new as it, so a result kept with its token is still right
   * whenever the token comes back the same: the one kind of cache that holds across processes.
   * Undefined where the store offers no such check: read afresh there.
   */
  changeToken(): Promise<string | undefined>;
  close(): Promise<void>;
}

export type { JobStatus, JobType };
