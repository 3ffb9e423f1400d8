import type { Actor } from './actor.js';
import { defaultAvatarPng } from './default-avatar.js';
import { AppError, ValidationError, notFound } from './errors.js';
import { checkImage } from './media.js';
import type { Clock, FileStore, IdGenerator, ImageCodec } from './ports.js';
import type { CharacterRecord, FaceModelRecord } from './records.js';
import type { RepositoryStore } from './repositories.js';


export interface CharacterChange {
  name?: string;
  description?: string;
  personalitySummary?: string;
  isPublic?: boolean;
}

export const characterLimits = {
  name: 100,
  description: 4000,
  personalitySummary: 4000,
  avatarBytes: 5 * 1024 * 1024,
} as const;

/** Characters: the personal model of an account (looks, voice, personality). */
export class Characters {
  constructor(
    private readonly store: RepositoryStore,
    private readonly files: FileStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly imageCodec: ImageCodec,
  ) {}

  /**
   * The character an account is created with, with its default avatar stored; the account's
   * own transaction stores the character.
   */
  async newCharacterFor(accountId: string, name: string): Promise<CharacterRecord> {
    const id = this.ids.uuid();
    const avatar = await this.files.put(defaultAvatarPng(id), 'image/png');
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
    if (!character || !canSee(actor, character)) throw notFound('Character', characterId);
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
      await this.getOwned(actor, characterId, 'change', current);
      return characters.update({ ...change(current), updatedMicros: this.clock.nowMicros() });
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
  if (issues.length > 0) throw new ValidationError(issues);
}
