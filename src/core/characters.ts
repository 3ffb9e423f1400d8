import type { Actor } from './actor.js';
import { defaultAvatarPng } from './default-avatar.js';
import { lorebookIssues } from './lorebooks.js';
import type { Lorebook } from './lorebook/lorebook.js';
import { actsFor } from './actor.js';
import { AppError, type FieldIssue, ValidationError, characterLimitReached, notFound } from './errors.js';
import { checkImage } from './media.js';
import type { Clock, FileStore, IdGenerator, ImageCodec } from './ports.js';
import { type CharacterDefinition, type CharacterRecord, type FaceModelRecord, emptyCharacterDefinition } from './records.js';
import type { CharacterPage, RepositoryStore } from './repositories.js';


export interface CharacterChange {
  name?: string;
  description?: string;
  personalitySummary?: string;
  isPublic?: boolean;
  /** Fields of the definition to change; the others stay. */
  definition?: Partial<CharacterDefinition>;
}

/** A new character: a name, and whatever else is known of it (a card gives much). */
export interface NewCharacter extends CharacterChange {
  name: string;
  /** The avatar's image; the generated default when absent. */
  avatar?: Uint8Array | undefined;
}

export interface CharactersOptions {
  /** How many characters (not deleted) an account may hold, its own one included. */
  maxPerAccount: number;
}

export const defaultCharactersOptions: CharactersOptions = { maxPerAccount: 20 };

/** Larger sides than any avatar needs are never made when an avatar is converted. */
const maxAvatarSide = 4096;

export const characterLimits = {
  name: 100,
  // Shared cards carry descriptions and personalities of several thousand words.
  description: 32_000,
  personalitySummary: 32_000,
  avatarBytes: 5 * 1024 * 1024,
  /** Each text of the definition (scenario, greetings, example dialogue, prompts, notes). */
  definitionText: 32_000,
  /** Alternate and group-only greetings, each. */
  greetings: 50,
  tags: 50,
  tag: 100,
  /** The card's `extensions` JSON, kept for other apps. */
  extensionsJson: 256 * 1024,
} as const;

/** Characters: the personal model of an account (looks, voice, personality). */
export class Characters {
  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly imageCodec: ImageCodec,
    private readonly options: CharactersOptions = defaultCharactersOptions,
  ) {}

  /**
   * Makes another character for `accountId` (an account acts for itself; the admin for anyone),
   * up to `maxPerAccount` (`CHARACTER_LIMIT_REACHED`), held by the database across processes.
   */
  async create(actor: Actor, accountId: string, input: NewCharacter, lorebook?: Lorebook): Promise<CharacterRecord> {
    if (!actsFor(actor, accountId)) throw new AppError('FORBIDDEN', 'An account may make characters only for itself.');
    validateChange(input);
    if (lorebook) {
      const issues = lorebookIssues(lorebook);
      if (issues.length > 0) throw new ValidationError(issues.map((issue) => ({ ...issue, field: `lorebook.${issue.field}` })));
    }
    // Refused before anything is stored when the account is full (the transaction checks again).
    if ((await this.store.characters.countOwned(accountId)) >= this.options.maxPerAccount) throw characterLimitReached(this.options.maxPerAccount);
    const avatar = input.avatar === undefined ? undefined : await checkImage('avatar', input.avatar, characterLimits.avatarBytes, this.imageCodec);
    const character = await this.newCharacterFor(accountId, input.name.trim(), input.avatar && avatar ? { bytes: input.avatar, mimeType: avatar } : undefined);
    const record: CharacterRecord = {
      ...character,
      description: input.description ?? '',
      personalitySummary: input.personalitySummary ?? '',
      isPublic: input.isPublic ?? false,
      definition: { ...emptyCharacterDefinition, ...input.definition },
    };
    // With its lorebook (a card's) in one transaction: a refused book leaves no character behind.
    return this.store
      .transaction(async (repositories) => {
        const created = await repositories.characters.createWithin(record, this.options.maxPerAccount);
        // A card numbers its entries within the book; ours are ids of their own.
        if (lorebook) await repositories.lorebooks.replace(created.id, { ...lorebook, entries: lorebook.entries.map((entry) => ({ ...entry, id: this.ids.uuid() })) });
        return created;
      })
      .catch(async (error: unknown) => {
        // Refused after its avatar was stored: the file is let go of, swept unless something holds it.
        if (character.avatar) await this.store.fileReleases.release([character.avatar.key], accountId, this.clock.nowMicros());
        throw error;
      });
  }

  /**
   * A page of characters by name: the account's own; with `query`, its own whose name contains
   * it, then public ones of others whose name starts with it.
   */
  list(actor: Actor, accountId: string, page: { query?: string | undefined; limit: number; cursor?: string | undefined }): Promise<CharacterPage> {
    if (!actsFor(actor, accountId)) throw new AppError('FORBIDDEN', 'An account lists only its own characters and public ones.');
    const query = page.query?.trim();
    return this.store.characters.list({
      accountId,
      limit: page.limit,
      ...(query ? { publicQuery: query } : {}),
      ...(page.cursor === undefined ? {} : { cursor: page.cursor }),
    });
  }

  /**
   * Deletes a character the actor owns, with its memories (written and learned), lorebook,
   * voice and face models; its files are let go of, and swept once nothing has held them for a
   * while (`FileSweep`). Its conversations keep their messages and show it as deleted. The
   * account's own character goes only with the account.
   */
  async delete(actor: Actor, characterId: string): Promise<void> {
    const character = await this.getOwned(actor, characterId);
    const account = await this.store.accounts.get(character.accountId);
    if (account?.characterId === characterId) {
      throw new AppError(
        'PERSONAL_CHARACTER_REQUIRED',
        `"${character.name}" is the account's own character (its personal model); it is deleted only with the account.`,
      );
    }
    const deletedMicros = this.clock.nowMicros();
    await this.store.transaction(async ({ characters, fileReleases }) => {
      await fileReleases.release(await characters.purge(characterId, deletedMicros), character.accountId, deletedMicros);
    });
    await this.onDeleted?.(characterId);
  }

  /** Hears each deletion, once committed: what lives outside the database goes too (a cloned voice). */
  onDeleted: ((characterId: string) => Promise<void>) | undefined;

  /**
   * The character an account is created with, with its default avatar stored; the account's
   * own transaction stores the character.
   */
  async newCharacterFor(accountId: string, name: string, image?: { bytes: Uint8Array; mimeType: string }): Promise<CharacterRecord> {
    const id = this.ids.uuid();
    const avatar = image ? await this.files.put(image.bytes, image.mimeType) : await this.files.put(defaultAvatarPng(id), 'image/png');
    const now = this.clock.nowMicros();
    const character: CharacterRecord = {
      id,
      accountId,
      name,
      description: '',
      personalitySummary: '',
      isPublic: false,
      avatar: { key: avatar.key, mimeType: avatar.mimeType },
      ttsVoiceId: null,
      createdMicros: now,
      updatedMicros: now,
      definition: emptyCharacterDefinition,
      deletedMicros: null,
      lorebookRevision: 0,
    };
    return character;
  }

  /**
   * Autocomplete: characters the actor may talk to, its own whose name contains `query` (any
   * case) first, then public ones whose name starts with it; at most `limit`, one indexed,
   * limited query each (the admin: every character whose name starts with it).
   */
  search(actor: Actor, query: string, limit: number): Promise<CharacterRecord[]> {
    return this.store.characters.search(query.trim(), { accountId: actor.type === 'account' ? actor.accountId : null, limit });
  }

  /** A character the actor may see: its own, a public one, or any for the admin. */
  async get(actor: Actor, characterId: string): Promise<CharacterRecord> {
    const character = await this.store.characters.get(characterId);
    // Only those who could see it learn that it was deleted (and its name).
    if (!character || !canSee(actor, character)) throw notFound('Character', characterId);
    if (character.deletedMicros) throw characterDeleted(character);
    return character;
  }

  /**
   * A character the actor owns (or any, for the admin); others get FORBIDDEN if they can see it,
   * in words about what they tried: `change` (default) or `read` something only the owner may.
   */
  async getOwned(actor: Actor, characterId: string, purpose: 'change' | 'read' = 'change', known?: CharacterRecord): Promise<CharacterRecord> {
    const character = known ?? (await this.get(actor, characterId));
    if (!canSee(actor, character)) throw notFound('Character', characterId);
    if (actor.type === 'account' && character.accountId !== actor.accountId) {
      throw new AppError(
        'FORBIDDEN',
        purpose === 'read'
          ? `Only the owner of character "${character.name}" can read its memories.`
          : `Only the owner of character "${character.name}" may change it.`,
      );
    }
    return character;
  }

  update(actor: Actor, characterId: string, change: CharacterChange): Promise<CharacterRecord> {
    validateChange(change);
    return this.#modify(actor, characterId, (character) => ({
      ...character,
      name: change.name?.trim() ?? character.name,
      description: change.description ?? character.description,
      personalitySummary: change.personalitySummary ?? character.personalitySummary,
      isPublic: change.isPublic ?? character.isPublic,
      definition: { ...character.definition, ...change.definition },
    }));
  }

  /** Replaces the avatar with an uploaded PNG, JPEG or WebP image. */
  async setAvatar(actor: Actor, characterId: string, bytes: Uint8Array): Promise<CharacterRecord> {
    await this.getOwned(actor, characterId);
    const mimeType = await checkImage('avatar', bytes, characterLimits.avatarBytes, this.imageCodec);
    const file = await this.files.put(bytes, mimeType);
    return this.#modify(actor, characterId, (character) => ({
      ...character,
      avatar: { key: file.key, mimeType: file.mimeType },
    }));
  }

  /**
   * The character's avatar as stored, or as a PNG when `as` says so (a card's image must be
   * one); the generated default when it has none.
   */
  async avatarImage(actor: Actor, characterId: string, as?: 'image/png'): Promise<{ bytes: Uint8Array; mimeType: string }> {
    const character = await this.get(actor, characterId);
    const stored = character.avatar ? await this.files.read(character.avatar.key) : undefined;
    const image = stored ? { bytes: new Uint8Array(stored), mimeType: character.avatar!.mimeType } : { bytes: defaultAvatarPng(character.id), mimeType: 'image/png' };
    if (as === undefined || image.mimeType === as) return image;
    const converted = await this.imageCodec.fit('avatar', image.bytes, maxAvatarSide, as);
    return { bytes: converted.data, mimeType: converted.mimeType };
  }

  /** Sets the voice the speech engine speaks the character with (`tts_voice_id`). */
  setVoice(actor: Actor, characterId: string, ttsVoiceId: string): Promise<CharacterRecord> {
    return this.#modify(actor, characterId, (character) => ({ ...character, ttsVoiceId }));
  }

  /** The character's LoRA face models, oldest first. */
  async faceModels(actor: Actor, characterId: string): Promise<FaceModelRecord[]> {
    await this.get(actor, characterId);
    return this.store.faceModels.listFor(characterId);
  }

  #modify(
    actor: Actor,
    characterId: string,
    change: (character: CharacterRecord) => CharacterRecord,
  ): Promise<CharacterRecord> {
    // Read and written in one transaction, so a concurrent change is not lost.
    return this.store.transaction(async ({ characters }) => {
      const current = await characters.get(characterId);
      if (!current) throw notFound('Character', characterId);
      if (current.deletedMicros) throw characterDeleted(current);
      await this.getOwned(actor, characterId, 'change', current);
      return characters.update({ ...change(current), updatedMicros: this.clock.nowMicros() });
    });
  }
}

/** The one answer about a deleted character, wherever it is asked for. */
export function characterDeleted(character: CharacterRecord): AppError {
  return new AppError('CHARACTER_DELETED', `"${character.name}" was deleted by its owner; its conversations can be read but not continued.`, {
    details: { characterId: character.id },
  });
}

/**
 * Refuses a character to answer in a conversation unless it may now: not deleted
 * (`CHARACTER_DELETED`), and public or with its owner among the conversation's speakers
 * (`CHARACTER_PRIVATE`). Visibility is checked again at every reply, not only when the
 * character came in: one its owner made private stops answering in others' conversations and
 * scenes, and goes on where its owner takes part (a thread or channel they brought it to).
 */
export function refuseUnlessItMaySpeak(character: CharacterRecord, speakerAccountIds: readonly string[]): void {
  if (character.deletedMicros !== null) throw characterDeleted(character);
  if (!character.isPublic && !speakerAccountIds.includes(character.accountId)) {
    throw new AppError('CHARACTER_PRIVATE', `"${character.name}" was made private by its owner: it answers only in conversations its owner takes part in. This conversation can still be read.`, {
      details: { characterId: character.id },
    });
  }
}

export function canSee(actor: Actor, character: CharacterRecord): boolean {
  return actor.type === 'admin' || character.isPublic || character.accountId === actor.accountId;
}

function validateChange(change: CharacterChange): void {
  const issues: { field: string; message: string }[] = [];
  if (change.name !== undefined && (change.name.trim().length === 0 || change.name.length > characterLimits.name)) {
    issues.push({ field: 'name', message: `must be 1 to ${characterLimits.name} characters` });
  }
  if (change.description !== undefined && change.description.length > characterLimits.description) {
    issues.push({ field: 'description', message: `must be at most ${characterLimits.description} characters` });
  }
  if (change.personalitySummary !== undefined && change.personalitySummary.length > characterLimits.personalitySummary) {
    issues.push({ field: 'personality_summary', message: `must be at most ${characterLimits.personalitySummary} characters` });
  }
  if (change.definition) issues.push(...definitionIssues(change.definition));
  if (issues.length > 0) throw new ValidationError(issues);
}

const definitionTexts = [
  ['nickname', 'nickname', characterLimits.name],
  ['scenario', 'scenario', characterLimits.definitionText],
  ['firstMessage', 'first_message', characterLimits.definitionText],
  ['exampleDialogue', 'example_dialogue', characterLimits.definitionText],
  ['systemPrompt', 'system_prompt', characterLimits.definitionText],
  ['postHistoryInstructions', 'post_history_instructions', characterLimits.definitionText],
  ['creatorNotes', 'creator_notes', characterLimits.definitionText],
  ['creator', 'creator', characterLimits.name],
  ['characterVersion', 'character_version', characterLimits.name],
] as const;

const definitionLists = [
  ['alternateGreetings', 'alternate_greetings', characterLimits.greetings, characterLimits.definitionText],
  ['groupOnlyGreetings', 'group_only_greetings', characterLimits.greetings, characterLimits.definitionText],
  ['tags', 'tags', characterLimits.tags, characterLimits.tag],
] as const;

/** Bounds on what a definition may hold, named by the API's field names. */
function definitionIssues(definition: Partial<CharacterDefinition>): FieldIssue[] {
  const issues: FieldIssue[] = [];
  for (const [key, field, limit] of definitionTexts) {
    const value = definition[key];
    if (value !== undefined && value.length > limit) issues.push({ field, message: `must be at most ${limit} characters` });
  }
  for (const [key, field, count, length] of definitionLists) {
    const value = definition[key];
    if (value === undefined) continue;
    if (value.length > count) issues.push({ field, message: `must hold at most ${count} items` });
    if (value.some((item) => item.length > length)) issues.push({ field, message: `each must be at most ${length} characters` });
  }
  if (definition.extensionsJson !== undefined && definition.extensionsJson.length > characterLimits.extensionsJson) {
    issues.push({ field: 'extensions', message: `must be at most ${characterLimits.extensionsJson} characters of JSON` });
  }
  return issues;
}
