/** The one way browser tests find and start Chromium: $SERVELAB_CHROMIUM, else the first known name on PATH. */
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import { type Browser, chromium } from 'playwright-core';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable'];
const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function findChromium(): string | undefined {
  const fromEnv = process.env.SERVELAB_CHROMIUM;
  if (fromEnv) return fromEnv;
  const dirs = (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const name of NAMES) {
    for (const dir of dirs) {
      const path = join(dir, name);
      if (executable(path)) return path;
    }
  }
  return undefined;
}

const CHROMIUM_PATH = findChromium();

/** Why browser tests cannot run here (pass to `needs`), or undefined. */
export const NO_BROWSER =
  CHROMIUM_PATH === undefined || !executable(CHROMIUM_PATH)
    ? `no Chromium found (${process.env.SERVELAB_CHROMIUM ? `SERVELAB_CHROMIUM=${process.env.SERVELAB_CHROMIUM} is not executable` : `none of ${NAMES.join(', ')} on PATH`}): install chromium or set SERVELAB_CHROMIUM`
    : undefined;

export function launchBrowser(): Promise<Browser> {
  if (CHROMIUM_PATH === undefined) throw new Error(NO_BROWSER);
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS, timeout: 30_000 });
}
