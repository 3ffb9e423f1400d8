/**
 * What the core keeps in the store. Field names are ours; the HTTP layer maps them onto
 * the spec's shapes. Timestamps: accounts and ledger in Unix milliseconds (as the spec's
 * Account), everything else in Unix microseconds (the spec's six fractional digits).
 */

export interface AccountRecord {
  id: string;
  createdMillis: number;
  username: string;
  isVerified: boolean;
  isDisabled: boolean;
  isSubscribed: boolean;
  meta: { dateOfBirth: string | null; referredByAccountId: string | null };
  tags: string[];
  characterId: string;
  profilePictureUrl: string | null;
}

export interface FileReference {
  key: string;
  mimeType: string;
}

export interface CharacterRecord {
  id: string;
  accountId: string;
  name: string;
  description: string;
  personalitySummary: string;
  isPublic: boolean;
  avatar: FileReference | null;
  ttsVoiceId: string | null;
  createdMicros: number;
  updatedMicros: number;
}

export interface MemoryRecord {
  id: string;
  text: string;
  createdMicros: number;
}

export interface ConversationRecord {
  id: string;
  /** The account that opened the conversation. */
  accountId: string;
  characterId: string;
  /** Accounts that may read and write, in the order they joined; the opener first. */
  speakerAccountIds: string[];
  createdMicros: number;
  updatedMicros: number;
}

export type ParticipantType = 'account' | 'character';

export interface MessageRecord {
  id: string;
  /** Text of the message; for an image message, empty or a caption. */
  content: string;
  mimeType: string;
  participantId: string;
  participantType: ParticipantType;
  createdMicros: number;
  /** The stored file of an image (or, later, audio) message. */
  file: FileReference | null;
}

export type TransactionType = 'credit' | 'debit' | 'refund';

export interface TransactionRecord {
  id: string;
  accountId: string;
  type: TransactionType;
  /** Always positive; `debit` lowers the balance, `credit` and `refund` raise it. */
  amount: number;
  reason: string;
  createdMillis: number;
  /** For a refund: the debit it gives back. */
  refundOf: string | null;
}

export interface ApiKeyRecord {
  accountId: string;
  createdMillis: number;
}

export type FaceModelStatus = 'IN_PROGRESS' | 'SUCCESS' | 'FAILED';

/** A trained LoRA face model of a character (training arrives with the image engines). */
export interface FaceModelRecord {
  id: string;
  characterId: string;
  jobId: string;
  createdMillis: number;
  status: FaceModelStatus;
  /** The trained archive, once status is SUCCESS. */
  archive: FileReference | null;
}
