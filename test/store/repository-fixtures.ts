import { createHash, randomUUID } from 'node:crypto';
import type { NewAccountRecords, NewStoredMessage } from '../../src/core/repositories.js';
import { type CharacterRecord, type JobRecord, type JobType, type LearnedMemoryRecord, type TransactionRecord, emptyCharacterDefinition } from '../../src/core/records.js';

/** Records as the core would build them, for the repository contract and the multi-process test. */

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function characterRecord(accountId: string, name: string, change: Partial<CharacterRecord> = {}): CharacterRecord {
  return {
    id: randomUUID(),
    accountId,
    name,
    description: '',
    personalitySummary: '',
    isPublic: false,
    avatar: { key: 'avatars/default.png', mimeType: 'image/png' },
    ttsVoiceId: null,
    createdMicros: Date.now() * 1000,
    updatedMicros: Date.now() * 1000,
    definition: emptyCharacterDefinition,
    deletedMicros: null,
    lorebookRevision: 0,
    ...change,
  };
}

export function newAccountRecords(username: string, startingBalance = 100): NewAccountRecords & { apiKey: string } {
  const accountId = randomUUID();
  const character = characterRecord(accountId, username);
  const apiKey = `lk_${randomUUID()}`;
  return {
    account: {
      id: accountId,
      createdMillis: Date.now(),
      username,
      isVerified: false,
      isDisabled: false,
      isSubscribed: false,
      meta: { dateOfBirth: null, referredByAccountId: null },
      tags: ['test'],
      characterId: character.id,
      profilePictureUrl: null,
    },
    character,
    apiKey,
    apiKeyHash: hashKey(apiKey),
    startingCredit: startingBalance > 0 ? transactionRecord(accountId, 'credit', startingBalance, 'starting balance') : null,
  };
}

export function transactionRecord(
  accountId: string,
  type: TransactionRecord['type'],
  amount: number,
  reason: string,
  change: Partial<TransactionRecord> = {},
): TransactionRecord {
  return { id: randomUUID(), accountId, type, amount, reason, createdMillis: Date.now(), refundOf: null, reference: null, ...change };
}

export function messageRecord(participantId: string, content: string): NewStoredMessage {
  return {
    id: randomUUID(),
    content,
    mimeType: 'text/plain',
    participantId,
    participantType: 'account',
    createdMicros: Date.now() * 1000,
    file: null,
  };
}

export function jobRecord(accountId: string, type: JobType = 'IMAGE_INFERENCE'): JobRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    accountId,
    clientId: null,
    createdMillis: now,
    type,
    payload: {
      prompt: 'a lighthouse',
      negativePrompt: '',
      width: 512,
      height: 512,
      samples: 1,
      seed: 7,
      guidanceScale: 7,
      steps: 20,
      promptStrength: 0.8,
      faceInpainting: false,
      maxFaceInpaintSize: 0,
      faceInpaintingPrompt: '',
      faceInpaintingNegativePrompt: '',
    },
    faceModel: null,
    photos: null,
    status: 'CREATED',
    statuses: [{ id: randomUUID(), status: 'CREATED', createdMillis: now }],
    outputFiles: [],
    transactionId: randomUUID(),
    externalId: null,
    startedMillis: null,
    failure: null,
    settled: false,
  };
}

/** An active person memory of `characterId` about `subjectAccountId`, said now in `conversationId`. */
export function learnedMemoryRecord(
  characterId: string,
  subjectAccountId: string,
  text: string,
  change: Partial<LearnedMemoryRecord> = {},
): LearnedMemoryRecord {
  const now = Date.now() * 1000;
  return {
    id: randomUUID(),
    characterId,
    subjectAccountId,
    kind: 'person',
    text,
    status: 'active',
    origin: 'private',
    conversationId: randomUUID(),
    messageIds: [randomUUID()],
    importance: 3,
    statedMicros: now,
    createdMicros: now,
    updatedMicros: now,
    supersededMicros: null,
    supersededBy: null,
    ...change,
  };
}

/** A distinct username per test run (usernames are 2 to 32 characters). */
export function uniqueUsername(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}
