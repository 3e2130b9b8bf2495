import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { renderExperimentFileDoc } from '../src/experiment/text/file-doc.js';

test('docs/experiment-file.md is what the schema renders (run `npm run docs:gen` after changing the schema)', () => {
  const checkedIn = readFileSync(new URL('../../docs/experiment-file.md', import.meta.url), 'utf8');
  assert.equal(checkedIn, renderExperimentFileDoc(), 'docs/experiment-file.md is stale: run `npm run docs:gen` and commit it');
});
