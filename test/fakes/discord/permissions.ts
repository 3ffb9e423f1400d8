/**
 * Permission sets the fake hands out: what a bot invited with the usual text permissions has,
 * what an ordinary member has, and what Discord grants in DMs. Tests lower the bot's set per
 * channel to model a missing permission; `app_permissions` and the REST checks both read it.
 */
import { PermissionFlagsBits } from 'discord-api-types/v10';

const bits = PermissionFlagsBits;

/** A bot invited with text, thread, file and voice permissions, without Administrator. */
export const DEFAULT_BOT_PERMISSIONS =
  bits.ViewChannel |
  bits.SendMessages |
  bits.SendMessagesInThreads |
  bits.CreatePublicThreads |
  bits.CreatePrivateThreads |
  bits.ManageThreads |
  bits.EmbedLinks |
  bits.AttachFiles |
  bits.ReadMessageHistory |
  bits.AddReactions |
  bits.UseExternalEmojis |
  bits.UseApplicationCommands |
  bits.Connect |
  bits.Speak |
  bits.UseVAD;

/** What the @everyone role of a fresh guild allows. */
export const DEFAULT_MEMBER_PERMISSIONS =
  bits.ViewChannel |
  bits.SendMessages |
  bits.SendMessagesInThreads |
  bits.CreatePublicThreads |
  bits.CreatePrivateThreads |
  bits.EmbedLinks |
  bits.AttachFiles |
  bits.ReadMessageHistory |
  bits.AddReactions |
  bits.UseExternalEmojis |
  bits.UseApplicationCommands |
  bits.Connect |
  bits.Speak |
  bits.UseVAD |
  bits.ChangeNickname |
  bits.CreateInstantInvite;

/** Every permission bit Discord defines; a guild owner has them all. */
export const ALL_PERMISSIONS = Object.values(bits).reduce((all, bit) => all | bit, 0n);

/** What `app_permissions` says in a DM with the bot. */
export const DIRECT_MESSAGE_PERMISSIONS =
  bits.ViewChannel |
  bits.SendMessages |
  bits.EmbedLinks |
  bits.AttachFiles |
  bits.ReadMessageHistory |
  bits.AddReactions |
  bits.UseExternalEmojis |
  bits.UseApplicationCommands;

export { PermissionFlagsBits };
