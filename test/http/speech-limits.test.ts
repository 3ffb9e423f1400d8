/**
 * Issue 28, item 4: speech is bounded. A text past SPEECH_MAX_TEXT_CHARACTERS is refused
 * before the engine is asked, and an account speaks at most SPEECH_RATE_LIMIT_PER_MINUTE
 * texts a minute (others are not held back by it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, startHarness } from './harness.js';

describe('the bounds of POST /characters/:id/speak', () => {
  let api: Harness;
  let talker: { id: string; characterId: string; key: string };
  let neighbour: { id: string; characterId: string; key: string };
  const speak = (who: { characterId: string; key: string }, text: string) =>
    api.call('POST', `/api/v0/characters/${who.characterId}/speak`, { key: who.key, body: { text } });

  beforeAll(async () => {
    api = await startHarness({ environment: { SPEECH_RATE_LIMIT_PER_MINUTE: '3' } });
    talker = await api.account('talker');
    neighbour = await api.account('neighbour');
    for (const who of [talker, neighbour]) {
      const trained = await api.call('POST', `/api/v0/characters/${who.characterId}/voice`, { key: who.key, body: { voiceId: 'en-us' } });
      expect(trained.status).toBe(200);
    }
  });
  afterAll(() => api.close());

  it('refuses a text past SPEECH_MAX_TEXT_CHARACTERS (1000 by default) with 400 SPEECH_TEXT_TOO_LONG naming the bound', async () => {
    const long = await speak(talker, 'word '.repeat(1000));
    expect(long.status).toBe(400);
    expect(long.body.error.code).toBe('SPEECH_TEXT_TOO_LONG');
    expect(long.body.error.message).toContain('1000');
    expect(long.body.error.details).toMatchObject({ maxCharacters: 1000, characters: 5000 });
    // A refused text takes nothing from the account's minute.
    for (const text of ['One.', 'Two.', 'Three.']) expect((await speak(talker, text)).status).toBe(200);
  });

  it('answers 429 RATE_LIMITED with Retry-After past SPEECH_RATE_LIMIT_PER_MINUTE, for that account only', async () => {
    const limited = await speak(talker, 'Four.');
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.body.error.message).toContain('3');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same text again (its audio stored) counts too: each request is a use.
    expect((await speak(talker, 'One.')).status).toBe(429);
    expect((await speak(neighbour, 'Four.')).status).toBe(200);
  });
});
