import { writeFileSync } from 'node:fs';
import { renderExperimentFileDoc } from '../src/experiment/text/file-doc.js';

/** `npm run docs:gen`: write docs/experiment-file.md from the schema (test/experiment-file-doc.test.ts checks it). */
const path = new URL('../../docs/experiment-file.md', import.meta.url);
writeFileSync(path, renderExperimentFileDoc());
process.stdout.write(`wrote ${path.pathname}\n`);
