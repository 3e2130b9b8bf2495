import { readFileSync } from 'node:fs';

/** Read from package.json at run time so the version is never out of step with the release. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
