import { type Command, isCommand } from '../src/bot/command.js';
import account from './account.js';
import admin from './admin.js';
import balance from './balance.js';
import character from './character.js';
import channel from './channel.js';
import chat from './chat.js';
import clear from './clear.js';
import conversations from './conversations.js';
import help from './help.js';
import imagine from './imagine.js';
import memories from './memories.js';
import scene from './scene.js';
import speak from './speak.js';
import voice from './voice.js';

/** Every slash command, checked to be one. */
export const commands: readonly Command[] = [chat, scene, channel, clear, conversations, character, memories, imagine, speak, voice, account, balance, help, admin].filter(isCommand);
