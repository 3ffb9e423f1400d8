import { describe, expect, it } from 'vitest';
import { addressedCharacter, withoutBotMention } from '../../src/bot/conversations/addressing.js';

const bot = '111111111111111111';
const ada = { id: 'c-ada', name: 'Ada' };
const adaL = { id: 'c-ada-l', name: 'Ada Lovelace' };
const bo = { id: 'c-bo', name: 'Bo' };
const cast = [ada, bo];

const address = (content: string, extra: { repliedToCharacterId?: string; cast?: typeof cast } = {}) =>
  addressedCharacter({ content, botUserId: bot, repliedToCharacterId: extra.repliedToCharacterId }, extra.cast ?? cast);

describe('addressedCharacter', () => {
  it('takes a message that starts with a name, in any case, with punctuation or an @', () => {
    expect(address('Ada, what do you think?')).toEqual({ characterId: 'c-ada', by: 'name' });
    expect(address('bo: hi')).toEqual({ characterId: 'c-bo', by: 'name' });
    expect(address('@Ada hello')).toEqual({ characterId: 'c-ada', by: 'name' });
    expect(address('  ＡＤＡ!')).toEqual({ characterId: 'c-ada', by: 'name' });
    expect(address('Bo')).toEqual({ characterId: 'c-bo', by: 'name' });
  });

  it('does not take a name that runs on into a longer word, or one not at the start', () => {
    expect(address('Adam said hi')).toBeUndefined();
    expect(address('Bobby tables')).toBeUndefined();
    expect(address('I think Ada is right')).toBeUndefined();
    expect(address('hello everyone')).toBeUndefined();
  });

  it('prefers the longer of two names that start the same', () => {
    expect(address('Ada Lovelace, compute this', { cast: [ada, adaL] })).toEqual({ characterId: 'c-ada-l', by: 'name' });
    expect(address('Ada, compute this', { cast: [ada, adaL] })).toEqual({ characterId: 'c-ada', by: 'name' });
  });

  it('takes a mention of the bot with a name anywhere, the earliest named', () => {
    expect(address(`<@${bot}> what would Bo say? or Ada?`)).toEqual({ characterId: 'c-bo', by: 'mention' });
    expect(address(`what do you think, Ada <@!${bot}>`)).toEqual({ characterId: 'c-ada', by: 'mention' });
    expect(address(`<@${bot}> Ada hi`)).toEqual({ characterId: 'c-ada', by: 'mention' });
  });

  it('says when the bot was mentioned without a name present', () => {
    expect(address(`<@${bot}> hello`)).toEqual({ characterId: undefined, by: 'mention' });
    // Someone else's mention is not the bot's.
    expect(address('<@222222222222222222> hello')).toBeUndefined();
  });

  it('takes a reply to a character present unless another is called by name', () => {
    expect(address('really?', { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-ada', by: 'reply' });
    // A name said to someone wins over the reply; a name that is only talked about does not.
    expect(address('Bo, what do you think of this?', { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-bo', by: 'name' });
    expect(address('Bo!', { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-bo', by: 'name' });
    expect(address('Bo said the same yesterday', { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-ada', by: 'reply' });
    expect(address(`<@${bot}> what would Bo say?`, { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-bo', by: 'mention' });
    // A bare mention of the bot in a reply goes to the character replied to.
    expect(address(`<@${bot}> hm?`, { repliedToCharacterId: 'c-ada' })).toEqual({ characterId: 'c-ada', by: 'reply' });
    // A reply to a character no longer present falls back to the words.
    expect(address('Bo, no', { repliedToCharacterId: 'c-gone' })).toEqual({ characterId: 'c-bo', by: 'name' });
  });
});

describe('withoutBotMention', () => {
  it('takes out only the bot mention', () => {
    expect(withoutBotMention(`<@${bot}> Ada, ask <@222222222222222222>`, bot)).toBe('Ada, ask <@222222222222222222>');
  });
});
