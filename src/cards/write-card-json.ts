/**
 * A character as card JSON: V3, whose `data` also holds every V2 field (the V3 spec's
 * backfill, so a V2 reader of the same object finds its fields), and a V2 object for a PNG's
 * `chara` chunk. `extensions` go out as the text read, with our own under `likeness`.
 */
import type { CardContents } from './card-types.js';
import { isObject } from './json-values.js';
import { likenessOf } from './lorebook-extensions.js';
import { memberValue, objectJsonOrEmpty } from './managed-members.js';
import { RawJsonWriter } from './raw-json.js';
import { cardLikenessKeys } from './read-card-json.js';
import { type CardVersion, writeLorebook } from './write-lorebook.js';

/** How the V3 card names its main icon: `ccdefault:` (the PNG itself, or the app's default) or a CHARX file. */
export interface MainIcon {
  uri: string;
  ext: string;
}

export const pngIcon: MainIcon = { uri: 'ccdefault:', ext: 'png' };

function v2Data(card: CardContents, version: CardVersion, writer: RawJsonWriter, extensionsJson: string): Record<string, unknown> {
  const { definition } = card;
  return {
    name: card.name,
    description: card.description,
    personality: card.personality,
    scenario: definition.scenario,
    first_mes: definition.firstMessage,
    mes_example: definition.exampleDialogue,
    creator_notes: definition.creatorNotes,
    system_prompt: definition.systemPrompt,
    post_history_instructions: definition.postHistoryInstructions,
    alternate_greetings: definition.alternateGreetings,
    ...(card.lorebook === null ? {} : { character_book: writeLorebook(card.lorebook, version, writer) }),
    tags: definition.tags,
    creator: definition.creator,
    character_version: definition.characterVersion,
    extensions: writer.raw(extensionsJson),
  };
}

export function cardV2Json(card: CardContents): string {
  const writer = new RawJsonWriter();
  const data = v2Data(card, 'v2', writer, objectJsonOrEmpty(card.definition.extensionsJson));
  return writer.stringify({ spec: 'chara_card_v2', spec_version: '2.0', data });
}

export function cardV3Json(card: CardContents, icon: MainIcon = pngIcon): string {
  const writer = new RawJsonWriter();
  const extensionsJson = objectJsonOrEmpty(card.definition.extensionsJson);
  const likeness = likenessOf({ likeness: memberValue(extensionsJson, 'likeness') });
  const kept = Object.fromEntries(cardLikenessKeys.filter((key) => key !== 'assets' && likeness[key] !== undefined).map((key) => [key, likeness[key]]));
  const assets = [{ type: 'icon', uri: icon.uri, name: 'main', ext: icon.ext }, ...(Array.isArray(likeness.assets) ? likeness.assets.filter(isObject) : [])];
  const data = {
    ...v2Data(card, 'v3', writer, extensionsJson),
    nickname: card.definition.nickname,
    group_only_greetings: card.definition.groupOnlyGreetings,
    ...kept,
    assets,
  };
  return writer.stringify({ spec: 'chara_card_v3', spec_version: '3.0', data });
}
