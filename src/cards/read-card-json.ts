/**
 * A card's JSON text (V1, V2 or V3) as our shapes. The text is parsed once for the values and
 * walked (json-spans.ts) for the `extensions` to keep as read.
 */
import { emptyCharacterDefinition } from '../core/records.js';
import { cardTooLarge, invalidJson, megabytes, notACard, versionUnsupported } from './card-errors.js';
import type { CardLimits } from './card-limits.js';
import type { CharacterCard } from './card-types.js';
import { memberSpan, objectText } from './json-spans.js';
import { defined, finiteNumber, isObject, type JsonObject, stringRecord, strings, text } from './json-values.js';
import { likenessMember } from './lorebook-extensions.js';
import { withManagedMembers } from './managed-members.js';
import { readLorebook } from './read-lorebook.js';

export type CardFields = Omit<CharacterCard, 'avatar'> & {
  /** The V3 `assets`, as parsed (a CHARX finds its icon there). */
  assets: unknown;
};

/**
 * V3 fields the definition has no field for, kept in the card's `extensions.likeness` (ours)
 * and written back to their places on export: a store that keeps `extensionsJson` keeps them
 * without a column of their own. `assets` keeps only the ones we can write back (not files
 * inside a CHARX, nor the main icon, which is the avatar).
 */
export const cardLikenessKeys = ['creator_notes_multilingual', 'source', 'creation_date', 'modification_date', 'assets'] as const;

/** Refuses `bytes` past the cap before decoding them; `where` names the text in messages. */
export function readCardJson(bytes: Uint8Array, where: string, limits: CardLimits): CardFields {
  if (bytes.byteLength > limits.maxJsonBytes) {
    throw cardTooLarge(`${where} is larger than ${megabytes(limits.maxJsonBytes)}`, 'jsonBytes', limits.maxJsonBytes);
  }
  let json = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
  if (json.charCodeAt(0) === 0xfeff) json = json.slice(1);
  let root: unknown;
  try {
    root = JSON.parse(json);
  } catch (error) {
    throw invalidJson(where, error);
  }
  if (!isObject(root)) throw notACard(`${where} is not a JSON object`);
  const rootStart = json.search(/\S/);
  const { data, dataStart, specVersion } = cardData(root, json, rootStart);
  const name = text(data.name);
  if (name.trim() === '') throw notACard(`${where} has no character name`);

  const extensionsJson = dataStart === undefined ? '{}' : objectText(json, memberSpan(json, dataStart, 'extensions'));
  const likeness = defined({
    creator_notes_multilingual: stringRecord(data.creator_notes_multilingual),
    source: Array.isArray(data.source) ? strings(data.source) : undefined,
    creation_date: finiteNumber(data.creation_date),
    modification_date: finiteNumber(data.modification_date),
    assets: keptAssets(data.assets),
  });
  const bookSpan = dataStart === undefined ? undefined : memberSpan(json, dataStart, 'character_book');
  return {
    name,
    description: text(data.description),
    personality: text(data.personality),
    definition: {
      ...emptyCharacterDefinition,
      nickname: text(data.nickname),
      scenario: text(data.scenario),
      firstMessage: text(data.first_mes),
      alternateGreetings: strings(data.alternate_greetings),
      groupOnlyGreetings: strings(data.group_only_greetings),
      exampleDialogue: text(data.mes_example),
      systemPrompt: text(data.system_prompt),
      postHistoryInstructions: text(data.post_history_instructions),
      // V1 cards as SillyTavern writes them call the notes `creatorcomment`.
      creatorNotes: text(data.creator_notes) || text(data.creatorcomment),
      tags: strings(data.tags),
      creator: text(data.creator),
      characterVersion: text(data.character_version),
      extensionsJson: withManagedMembers(extensionsJson, [likenessMember(likeness)]),
    },
    lorebook: isObject(data.character_book) && bookSpan !== undefined ? readLorebook(data.character_book, json, bookSpan) : null,
    specVersion,
    assets: data.assets,
  };
}

/** The card's fields object (V2/V3 `data`, or the V1 root) and where it starts in the text. */
function cardData(root: JsonObject, json: string, rootStart: number): { data: JsonObject; dataStart: number | undefined; specVersion: string } {
  const spec = root.spec;
  if (spec === undefined) {
    // V1 has no spec: a name and a character's fields at the root.
    const v1Fields = ['description', 'personality', 'scenario', 'first_mes', 'mes_example'];
    if (!v1Fields.some((field) => typeof root[field] === 'string')) throw notACard('it has neither a card spec nor a character’s fields');
    return { data: root, dataStart: undefined, specVersion: '1.0' };
  }
  if (typeof spec !== 'string') throw notACard('its spec is not a name');
  if (spec === 'lorebook_v3') throw notACard('it is a lorebook (lorebook_v3), not a character');
  const major = /^chara_card_v(\d+)$/.exec(spec)?.[1];
  if (major === undefined) throw notACard(`its spec is ${JSON.stringify(spec.slice(0, 40))}`);
  if (major !== '2' && major !== '3') throw versionUnsupported(spec);
  const declared = typeof root.spec_version === 'string' || typeof root.spec_version === 'number' ? String(root.spec_version) : '';
  const declaredMajor = Math.floor(Number.parseFloat(declared));
  if (declared !== '' && Number.isFinite(declaredMajor) && String(declaredMajor) !== major) {
    throw versionUnsupported(`${spec} version ${declared.slice(0, 20)}`);
  }
  if (!isObject(root.data)) throw notACard(`it says ${spec} but has no data object`);
  const dataSpan = memberSpan(json, rootStart, 'data');
  return { data: root.data, dataStart: dataSpan?.start, specVersion: declared || `${major}.0` };
}

/** Assets we can write back as they are: links, not the files of a CHARX nor the main icon. */
function keptAssets(assets: unknown): unknown[] | undefined {
  if (!Array.isArray(assets)) return undefined;
  const kept = assets
    .filter((asset) => isObject(asset) && typeof asset.uri === 'string' && !/^(embeded|embedded):\/\/|^ccdefault:/.test(asset.uri) && !(asset.type === 'icon' && asset.name === 'main'))
    .map((asset) => ({ type: text(asset.type), uri: text(asset.uri), name: text(asset.name), ext: text(asset.ext) }));
  return kept.length > 0 ? kept : undefined;
}
