import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { z } from 'zod';
import { shapeOf } from '../src/config/schema-doc.js';
import { experimentFileSchema } from '../src/experiment/spec/schema.js';
import { renderExperimentFileDoc } from '../src/experiment/text/file-doc.js';

test('docs/experiment-file.md is what the schema renders (run `npm run docs:gen` after changing the schema)', () => {
  const checkedIn = readFileSync(new URL('../../docs/experiment-file.md', import.meta.url), 'utf8');
  assert.equal(checkedIn, renderExperimentFileDoc(), 'docs/experiment-file.md is stale: run `npm run docs:gen` and commit it');
});

test('the reference has a section for every mapping of the file, quality.equivalence included', () => {
  const doc = renderExperimentFileDoc();
  const top = shapeOf(experimentFileSchema as unknown as z.ZodType)!;
  const mappings = Object.entries(top).flatMap(([key, schema]) => {
    const shape = shapeOf(schema);
    if (!shape) return [];
    // A mapping made only of mappings (quality:) is documented by its parts.
    return Object.values(shape).every((child) => shapeOf(child)) ? Object.keys(shape).map((child) => `${key}.${child}`) : [key];
  });
  assert.ok(mappings.includes('quality.equivalence'), mappings.join(', '));
  for (const section of mappings) assert.match(doc, new RegExp(`^## \`${section.replace('.', '\\.')}:\``, 'm'), `no section for ${section}`);
});
