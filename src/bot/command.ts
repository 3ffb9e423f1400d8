import type {
  AutocompleteInteraction,
  ButtonInteraction,
  ChatInputCommandInteraction,
  InteractionEditReplyOptions,
  InteractionReplyOptions,
  RESTPostAPIChatInputApplicationCommandsJSONBody,
  User,
} from 'discord.js';
import { MessageFlags } from 'discord.js';
import type { Actor } from '../core/actor.js';
import type { Core } from '../core/core.js';
import type { Logger } from '../core/ports.js';
import type { AccountRecord } from '../core/records.js';
import type { ConversationLinks } from './conversation-links.js';
import type { ConversationRunner } from './conversation-runner.js';
import type { JobDeliveries } from './job-deliveries.js';
import type { VoicePlayback } from './voice-playback.js';

/** What commands get to do their work: no globals. */
export interface BotContext {
  core: Core;
  links: ConversationLinks;
  runner: ConversationRunner;
  /** Speech in voice channels, one queue per guild. */
  voice: VoicePlayback;
  /** Image jobs and face-model trainings followed until their result is in Discord. */
  deliveries: JobDeliveries;
  logger: Logger;
  /** Discord user ids allowed to use /admin. */
  ownerIds: ReadonlySet<string>;
  /** The account of a Discord user (made on first use) and the actor acting as it. */
  accountOf(user: User): Promise<{ actor: Actor; account: AccountRecord }>;
}

/** A slash command: typed JSON data for Discord, and what it does. */
export interface Command {
  data: RESTPostAPIChatInputApplicationCommandsJSONBody;
  /** Whether its answers are only for the person who asked (also used when it is deferred for them). */
  ephemeral: boolean;
  execute(interaction: ChatInputCommandInteraction, context: BotContext): Promise<void>;
  autocomplete?(interaction: AutocompleteInteraction, context: BotContext): Promise<void>;
  /** Buttons whose custom id starts with `<command name>:`. */
  button?(interaction: ButtonInteraction, context: BotContext): Promise<void>;
}

export function isCommand(value: unknown): value is Command {
  return (
    typeof value === 'object' &&
    value !== null &&
    'data' in value &&
    'execute' in value &&
    typeof (value as Command).execute === 'function' &&
    typeof (value as Command).data?.name === 'string'
  );
}

type Answerable = ChatInputCommandInteraction | ButtonInteraction;

/** Deferrals under way: discord.js marks an interaction deferred only once Discord has answered. */
const deferrals = new WeakMap<Answerable, Promise<void>>();

/**
 * Defers an interaction unless it is deferred, answered, or being deferred already. The router
 * defers slow commands after two seconds; a command that defers late (after quick checks that
 * should fail privately) goes through here too, so the two never both defer.
 */
export function deferOnce(interaction: Answerable, ephemeral: boolean): Promise<void> {
  if (interaction.deferred || interaction.replied) return Promise.resolve();
  let pending = deferrals.get(interaction);
  if (!pending) {
    pending = interaction.deferReply(ephemeral ? { flags: MessageFlags.Ephemeral } : {}).then(() => undefined);
    deferrals.set(interaction, pending);
  }
  return pending;
}

/**
 * Answers an interaction whether or not it was deferred already (the router defers any
 * command that has not answered within two seconds).
 */
export async function answer(interaction: Answerable, payload: string | InteractionEditReplyOptions, ephemeral = true): Promise<void> {
  const options = typeof payload === 'string' ? { content: payload } : payload;
  await deferrals.get(interaction)?.catch(() => undefined);
  if (interaction.deferred || interaction.replied) {
    await interaction.editReply({ allowedMentions: { parse: [] }, ...options });
  } else {
    await interaction.reply({
      allowedMentions: { parse: [] },
      ...(options as InteractionReplyOptions),
      ...(ephemeral ? { flags: MessageFlags.Ephemeral } : {}),
    });
  }
}
