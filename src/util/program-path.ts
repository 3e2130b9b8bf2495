import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';

/** Why `name` cannot be run as execvp would look it up (in `path`, relative to `cwd`), if so. */
export function notRunnable(name: string, path: string, cwd?: string): string | undefined {
  const base = cwd ?? process.cwd();
  const candidates = name.includes('/') ? [resolve(base, name)] : path.split(delimiter).map((dir) => resolve(base, dir || '.', name));
  for (const candidate of candidates) {
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return undefined;
    } catch {
      // Not here, or not executable: the next directory of PATH.
    }
  }
  return name.includes('/') ? `${name} is not an executable file` : 'not found on PATH';
}

/**
 * Whether a program this process would spawn (its own PATH) is missing. Spawning a missing one still forks this
 * process first (7-9 ms of a runner's event loop on the 2-core dev box): a CPU-only host asks for nvidia-smi several
 * times per trial. Undefined PATH: execvp's own default path applies, so nothing is claimed.
 */
export function missingProgram(name: string): boolean {
  const path = process.env.PATH;
  return path !== undefined && notRunnable(name, path) !== undefined;
}
