/**
 * `{{roll:…}}`: dice as tabletop players write them. `d20` or `20` is one twenty-sided die,
 * `2d6` two six-sided ones summed, `2d6+1` with a modifier.
 */

/** More dice than this, or more sides, is not a roll anyone means: the macro stays as written. */
const maxDice = 100;
const maxSides = 1_000_000;

/** The total rolled, as text; undefined when `formula` is not dice. */
export function rollDice(formula: string, random: () => number): string | undefined {
  const trimmed = formula.trim();
  // A bare number is the number of sides ("roll:20" is "roll:d20"), as SillyTavern reads it.
  const dice = /^\d+\s*(?:[+-]\s*\d+)?$/.test(trimmed) ? `d${trimmed}` : trimmed;
  const match = /^(\d*)\s*d\s*(\d+)\s*(?:([+-])\s*(\d+))?$/i.exec(dice);
  if (!match) return undefined;
  const [, countText, sidesText, sign, modifierText] = match;
  const count = countText === undefined || countText === '' ? 1 : Number(countText);
  const sides = Number(sidesText);
  if (count < 1 || count > maxDice || sides < 1 || sides > maxSides) return undefined;
  let total = 0;
  for (let die = 0; die < count; die++) total += 1 + Math.min(sides - 1, Math.floor(random() * sides));
  const modifier = modifierText === undefined ? 0 : Number(modifierText);
  return String(sign === '-' ? total - modifier : total + modifier);
}
