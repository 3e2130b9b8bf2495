import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { test } from 'node:test';

const root = new URL('../../', import.meta.url);

test("ARCHITECTURE.md's layer list is .dependency-cruiser.cjs's LAYERS, top first", () => {
  const architecture = readFileSync(new URL('ARCHITECTURE.md', root), 'utf8');
  const block = architecture.split('## Layers')[1]!.split('```')[1]!;
  const documented = block
    .trim()
    .split('\n')
    .map((line) => line.split(/\s+/)[0]!.replace(/,$/, ''));
  const source = readFileSync(new URL('.dependency-cruiser.cjs', root), 'utf8');
  const layers = [
    ...source
      .split('const LAYERS = [')[1]!
      .split('];')[0]!
      .matchAll(/'(\w+)'/g),
  ].map((match) => match[1]!);
  assert.deepEqual(documented, [...layers].reverse());
  // The rules module itself agrees with the text it was read from (its first rule is the lowest layer's).
  const rules = createRequire(import.meta.url)(new URL('.dependency-cruiser.cjs', root).pathname) as { forbidden: Array<{ name: string }> };
  assert.equal(rules.forbidden[0]!.name, `layer-${layers[0]}`);
});
