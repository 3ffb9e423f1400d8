import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';

const size = 5;
const scale = 48;
const margin = 24;

/**
 * A default avatar for a character that has none: a symmetric 5×5 identicon whose pattern
 * and colour come from the character id, so the same id always gives the same PNG.
 */
export function defaultAvatarPng(characterId: string): Buffer {
  const digest = createHash('sha256').update(characterId).digest();
  const hue = (digest[0]! * 256 + digest[1]!) % 360;
  const foreground = hslToRgb(hue, 0.55, 0.5);
  const background = [240, 240, 240] as const;
  const side = size * scale + margin * 2;
  const png = new PNG({ width: side, height: side, colorType: 2 });
  for (let y = 0; y < side; y++) {
    for (let x = 0; x < side; x++) {
      const cellX = Math.floor((x - margin) / scale);
      const cellY = Math.floor((y - margin) / scale);
      const inside = x >= margin && y >= margin && cellX < size && cellY < size;
      // Mirror the left half onto the right so the pattern reads as a face-like figure.
      const column = cellX < 3 ? cellX : size - 1 - cellX;
      const on = inside && ((digest[2 + cellY * 3 + column]! & 1) === 1);
      const colour = on ? foreground : background;
      const offset = (y * side + x) * 4;
      png.data[offset] = colour[0];
      png.data[offset + 1] = colour[1];
      png.data[offset + 2] = colour[2];
      png.data[offset + 3] = 255;
    }
  }
  return PNG.sync.write(png, { colorType: 2 });
}

function hslToRgb(hue: number, saturation: number, lightness: number): [number, number, number] {
  const chroma = (1 - Math.abs(2 * lightness - 1)) * saturation;
  const secondary = chroma * (1 - Math.abs(((hue / 60) % 2) - 1));
  const match = lightness - chroma / 2;
  const [red, green, blue] =
    hue < 60 ? [chroma, secondary, 0] : hue < 120 ? [secondary, chroma, 0] : hue < 180 ? [0, chroma, secondary]
    : hue < 240 ? [0, secondary, chroma] : hue < 300 ? [secondary, 0, chroma] : [chroma, 0, secondary];
  return [Math.round((red + match) * 255), Math.round((green + match) * 255), Math.round((blue + match) * 255)];
}
