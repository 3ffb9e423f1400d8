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
import type { DiscordChannelRepository } from '../core/repositories.js';
import type { ConversationLinks } from './conversations/conversation-links.js';
import type { ConversationRunner } from './conversations/conversation-runner.js';
import type { JobDeliveries } from './deliveries/job-deliveries.js';
import type { Places } from './conversations/places.js';
import type { PersonaReplies } from './personas/persona-replies.js';
import type { VoicePlayback } from './voice/voice-playback.js';
import type { VoiceRules } from './voice/voice-rules.js';
import type { VoiceTalk } from './voice/voice-talk.js';

/** What commands get to do their work: no globals. */
export interface BotContext {
  core: Core;
  links: ConversationLinks;
  /** Server channels where characters speak when addressed, and who wrote which bot message. */
  channels: DiscordChannelRepository;
  /** What a guild channel or thread is: a conversation thread, a character channel, or neither. */
  places: Places;
  runner: ConversationRunner;
  /** Where a character's reply goes: as itself through a webhook in servers, as the bot in DMs. */
  replies: PersonaReplies;
  /** Speech in voice channels, one queue per guild. */
  voice: VoicePlayback;
  /** Characters holding a conversation by voice in a call (/voice talk), one per guild. */
  talk: VoiceTalk;
  /** Where characters may listen in calls, who opted out, each server's thresholds (/voice listening, /voice ignore me). */
  voiceRules: VoiceRules;
  /** Image jobs and face-model trainings followed until their result is in Discord. */
  deliveries: JobDeliveries;
  logger: Logger;
  /** Discord user ids allowed to use /admin. */
  ownerIds: ReadonlySet<string>;
  /** The account of a Discord user (made on first use) and the actor acting as it. */
  accountOf(user: User): Promise<{ actor: Actor; account: AccountRecord }>;
}

/**
 * When the router acknowledges a command with a deferral: `at-once`, before the command runs
 * (work that takes seconds: downloads, engines, threads), or `when-slow`, only if the command
 * has not answered within two seconds (the default; a quick refusal then stays a plain reply).
 */
export type Deferral = 'at-once' | 'when-slow';

/** A slash command: typed JSON data for Discord, and what it does. Only the router defers. */
export interface Command {
  data: RESTPostAPIChatInputApplicationCommandsJSONBody;
  /** Whether its answers are only for the person who asked (also used when it is deferred for them). */
  ephemeral: boolean;
  /** Its deferral, or one per subcommand name (those not named: `when-slow`). */
  defer?: Deferral | Readonly<Record<string, Deferral>>;
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

/** The deferral a command declares for this invocation. */
export function deferralOf(command: Command, interaction: ChatInputCommandInteraction): Deferral {
  const { defer } = command;
  if (defer === undefined || typeof defer === 'string') return defer ?? 'when-slow';
  const subcommand = interaction.options.getSubcommand(false);
  return (subcommand === null ? undefined : defer[subcommand]) ?? 'when-slow';
}

/** Deferrals under way: discord.js marks an interaction deferred only once Discord has answered. */
const deferrals = new WeakMap<Answerable, Promise<void>>();

/**
 * Defers an interaction unless it is deferred, answered, or being deferred already. Called by
 * the router only (at once, or after two seconds), so a deferral never races another.
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
