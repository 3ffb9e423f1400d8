/**
 * Real PNG files for the fake engines, cheap to make at any size up to 1024²: a grid of
 * solid colour blocks whose colours come from a hash of everything that decides a diffusion
 * image, so the same recipe always gives the same pixels and any change gives others.
 */
import { createHash } from 'node:crypto';
import { PNG } from 'pngjs';

export interface PictureRecipe {
  prompt: string;
  seed: number;
  width: number;
  height: number;
  /** Which image of the batch. */
  index: number;
  /** Anything else that shapes the image, e.g. a digest of the applied LoRA. */
  salt?: string;
}

const GRID = 4;

export function fakePicture(recipe: PictureRecipe): Buffer {
  const { width, height } = recipe;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1 || width > 1024 || height > 1024) {
    throw new RangeError(`fake pictures are 1..1024 pixels a side, not ${width}×${height}`);
  }
  const digest = createHash('sha512')
    .update(JSON.stringify([recipe.prompt, recipe.seed, width, height, recipe.index, recipe.salt ?? '']))
    .digest();
  const png = new PNG({ width, height, colorType: 2 });
  const rowBytes = width * 4;
  for (let blockRow = 0; blockRow < GRID; blockRow++) {
    // One row is painted per block row and copied down: cost grows with the area only by memcpy.
    const row = Buffer.alloc(rowBytes);
    for (let x = 0; x < width; x++) {
      const block = blockRow * GRID + Math.min(GRID - 1, Math.floor((x * GRID) / width));
      const offset = x * 4;
      row[offset] = digest[(block * 3) % digest.length]!;
      row[offset + 1] = digest[(block * 3 + 1) % digest.length]!;
      row[offset + 2] = digest[(block * 3 + 2) % digest.length]!;
      row[offset + 3] = 255;
    }
    const top = Math.floor((blockRow * height) / GRID);
    const bottom = Math.floor(((blockRow + 1) * height) / GRID);
    for (let y = top; y < bottom; y++) row.copy(png.data, y * rowBytes);
  }
  return PNG.sync.write(png, { colorType: 2 });
}

/** A tqdm progress line as diffusers and Cog models print it. */
export function tqdmLine(step: number, steps: number): string {
  const percent = Math.round((step / steps) * 100);
  const filled = Math.round((step / steps) * 10);
  return `${String(percent).padStart(3)}%|${'█'.repeat(filled)}${' '.repeat(10 - filled)}| ${step}/${steps} [00:0${step % 10}<00:00, 7.41it/s]\n`;
}
