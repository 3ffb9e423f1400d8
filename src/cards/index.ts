/**
 * Character cards (V1, V2, V3; PNG, JSON, CHARX) in and out, at the edge: the HTTP API and
 * the bot read a file into our shapes here and write one from them.
 */
export { type CardLimits, defaultCardLimits } from './card-limits.js';
export type { CardContents, CardImage, CardMimeType, CharacterCard } from './card-types.js';
export { readCard } from './read-card.js';
export { writeCardJson, writeCardPng, writeCharx } from './write-card.js';
export { cardV2Json, cardV3Json } from './write-card-json.js';
