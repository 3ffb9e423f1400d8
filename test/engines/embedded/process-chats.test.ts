import { describe, expect, it } from 'vitest';
import { processChats } from '../../../src/chat-engine.js';
import { parseConfig } from '../../../src/config.js';

describe('which processes load the embedded model', () => {
  it('the API and a bot of its own chat; a worker and a shard manager without the API do not', () => {
    const chats = (environment: Record<string, string>) => processChats(parseConfig(environment));
    expect(chats({})).toBe(true);
    expect(chats({ ROLES: 'api' })).toBe(true);
    expect(chats({ ROLES: 'worker' })).toBe(false);
    expect(chats({ ROLES: 'bot', DISCORD_TOKEN: 'token' })).toBe(true);
    // The manager forks one process per shard; those chat, it does not.
    expect(chats({ ROLES: 'bot,worker', DISCORD_TOKEN: 'token', DISCORD_SHARDS: '2' })).toBe(false);
  });
});
