import { messageOf, UserError } from '../util/errors.js';

/**
 * SQLite failures in words. Kept apart from db.ts (no better-sqlite3 import) so the CLI's failure printer can use
 * it without loading the native module.
 */

/** Path of the store this process opened last: low-level SQLite errors are reported against it. */
let openedPath: string | undefined;

export function noteStorePath(path: string): void {
  openedPath = path;
}

/**
 * A low-level SQLite failure as a one-line UserError naming the store and what to do; anything else unchanged.
 * `path` defaults to the store this process opened.
 */
export function storeFault(error: unknown, path = openedPath): unknown {
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code !== 'string' || !code.startsWith('SQLITE_') || error instanceof UserError) return error;
  const where = `store ${path ?? '(unknown path)'}`;
  const fault = (cause: string, hint: string): UserError => {
    const user = new UserError(`${where}: ${cause} (${code})`, hint);
    user.cause = error;
    return user;
  };
  if (code.startsWith('SQLITE_FULL')) return fault('the disk is full', 'free space on its file system, then resume the run');
  if (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED')) {
    return fault('locked by another process for more than 10 s', 'find the process holding it (`fuser` on the file) and let it finish, then resume the run');
  }
  if (code.startsWith('SQLITE_NOTADB') || code.startsWith('SQLITE_CORRUPT')) {
    return fault(
      'the file is not a valid servelab store (corrupt or another kind of file)',
      'move it aside and pass --store PATH (or restore it from a backup)',
    );
  }
  if (code.startsWith('SQLITE_READONLY') || code.startsWith('SQLITE_CANTOPEN') || code.startsWith('SQLITE_PERM')) {
    return fault('cannot write to it', 'make the file and its folder writable, or pass another --store PATH (ls, show, report and ui can read it as it is)');
  }
  if (code.startsWith('SQLITE_IOERR')) return fault(`input/output error: ${messageOf(error)}`, 'check the disk and the file system, then resume the run');
  return fault(messageOf(error), 'check the store file, or pass another --store PATH');
}
