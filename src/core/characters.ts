import type { Actor } from './actor.js';
import { defaultAvatarPng } from './default-avatar.js';
import { AppError, ValidationError, notFound } from './errors.js';
import { keys } from './keys.js';
import { checkImage } from './media.js';
import type { Clock, FileStore, IdGenerator, ImageCodec, Store } from './ports.js';
import type { CharacterRecord, FaceModelRecord } from './records.js';

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
    private readonly store: Store,
    private readonly files: FileStore,
    private readonly clock: Clock,
    private readonly ids: IdGenerator,
    private readonly imageCodec: ImageCodec,
  ) {}

  /** Makes the character an account is created with, with its default avatar. */
  async createFor(accountId: string, name: string): Promise<CharacterRecord> {
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
    await this.store.set(keys.character(id), character);
    await this.store.append(keys.characters(), () => id);
    return character;
  }

  /**
   * Characters the actor may talk to whose name contains `query` (any case): its own first,
   * then public ones, at most `limit`.
   */
  async search(actor: Actor, query: string, limit: number): Promise<CharacterRecord[]> {
    const ids = await this.store.range<string>(keys.characters());
    const characters = await this.store.getMany<CharacterRecord>(ids.map((id) => keys.character(id)));
    const needle = query.trim().toLowerCase();
    const matches = characters.filter(
      (character): character is CharacterRecord =>
        character !== undefined && canSee(actor, character) && character.name.toLowerCase().includes(needle),
    );
    const own = (character: CharacterRecord) => actor.type === 'account' && character.accountId === actor.accountId;
    return [...matches.filter(own), ...matches.filter((character) => !own(character))].slice(0, limit);
  }

  /** A character the actor may see: its own, a public one, or any for the admin. */
  async get(actor: Actor, characterId: string): Promise<CharacterRecord> {
    const character = await this.store.get<CharacterRecord>(keys.character(characterId));
    if (!character || !canSee(actor, character)) throw notFound('Character', characterId);
    return character;
  }

  /**
   * A character the actor owns (or any, for the admin); others get FORBIDDEN if they can see it,
   * in words about what they tried: `change` (default) or `read` something only the owner may.
   */
  async getOwned(actor: Actor, characterId: string, purpose: 'change' | 'read' = 'change'): Promise<CharacterRecord> {
    const character = await this.get(actor, characterId);
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
    const ids = await this.store.range<string>(keys.faceModels(characterId));
    const models = await this.store.getMany<FaceModelRecord>(ids.map((id) => keys.faceModel(id)));
    return models.filter((model): model is FaceModelRecord => model !== undefined);
  }

  #modify(
    actor: Actor,
    characterId: string,
    change: (character: CharacterRecord) => CharacterRecord,
  ): Promise<CharacterRecord> {
    return this.store.withLock(keys.character(characterId), async () => {
      const current = await this.getOwned(actor, characterId);
      const updated = { ...change(current), updatedMicros: this.clock.nowMicros() };
      await this.store.set(keys.character(characterId), updated);
      return updated;
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
