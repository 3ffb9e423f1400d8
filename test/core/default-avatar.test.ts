import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { defaultAvatarPng } from '../../src/core/default-avatar.js';

describe('defaultAvatarPng', () => {
  it('is a valid PNG, the same for the same id and different for another', () => {
    const first = defaultAvatarPng('6f1c2a10-0000-4000-8000-000000000001');
    const again = defaultAvatarPng('6f1c2a10-0000-4000-8000-000000000001');
    const other = defaultAvatarPng('6f1c2a10-0000-4000-8000-000000000002');
    expect(first.equals(again)).toBe(true);
    expect(first.equals(other)).toBe(false);
    const image = PNG.sync.read(first);
    expect(image.width).toBe(288);
    expect(image.height).toBe(288);
    // Not a blank square: both background and a coloured cell are present.
    const colours = new Set<string>();
    for (let offset = 0; offset < image.data.length; offset += 4) {
      colours.add(`${image.data[offset]},${image.data[offset + 1]},${image.data[offset + 2]}`);
    }
    expect(colours.size).toBe(2);
  });
});
