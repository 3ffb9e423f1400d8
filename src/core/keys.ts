/** Store keys and list names, in one place so their layout is easy to see and to migrate. */
export const keys = {
  account: (accountId: string) => `account:${accountId}`,
  accountByUsername: (username: string) => `account-by-username:${username.toLowerCase()}`,
  /** List of every account id, in creation order. */
  accounts: () => 'accounts',
  apiKey: (keyHash: string) => `api-key:${keyHash}`,
  /** Hashes of the keys an account holds now, so issuing a new key can revoke them. */
  apiKeysOf: (accountId: string) => `api-keys-of:${accountId}`,
  character: (characterId: string) => `character:${characterId}`,
  /** List of every character id, in creation order. */
  characters: () => 'characters',
  /** List of the ids of a character's face models, oldest first. */
  faceModels: (characterId: string) => `face-models:${characterId}`,
  faceModel: (faceModelId: string) => `face-model:${faceModelId}`,
  job: (jobId: string) => `job:${jobId}`,
  /** List of an account's job ids, oldest first. */
  accountJobs: (accountId: string) => `account-jobs:${accountId}`,
  /** List of every job id in creation order: the work queue recovery reads after a restart. */
  jobQueue: () => 'job-queue',
  /** Index in the job queue before which every job is final and settled. */
  jobQueueSettled: () => 'job-queue-settled',
  memories: (characterId: string) => `memories:${characterId}`,
  memoryEmbedding: (memoryId: string, model: string) => `memory-embedding:${model}:${memoryId}`,
  conversation: (conversationId: string) => `conversation:${conversationId}`,
  /** The rolling summary of the messages that fell out of the conversation's context window. */
  conversationSummary: (conversationId: string) => `conversation-summary:${conversationId}`,
  /** What was learned about a chat model (cannot see images, a smaller context). */
  chatModelTraits: (modelId: string) => `chat-model-traits:${modelId}`,
  /** List of the messages of a conversation, oldest first. */
  messages: (conversationId: string) => `messages:${conversationId}`,
  /** List of conversation ids an account takes part in, in the order it joined them. */
  accountConversations: (accountId: string) => `account-conversations:${accountId}`,
  /** List of an account's transactions, oldest first. */
  ledger: (accountId: string) => `ledger:${accountId}`,
  transaction: (transactionId: string) => `transaction:${transactionId}`,
  refundOf: (debitId: string) => `refund-of:${debitId}`,
  /** The stored mp3 of one text in one voice, so the same request is not synthesised twice. */
  speech: (hash: string) => `speech:${hash}`,
} as const;
