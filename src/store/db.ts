import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { messageOf, UserError } from '../util/errors.js';
import { useRedactionSalt } from '../util/redact.js';
import { noteStorePath, storeFault } from './fault.js';
import { migrations } from './migrations.js';

export type Db = Database.Database;

/** `--store`, else $SERVELAB_STORE, else ~/.servelab/servelab.db. */
export function defaultStorePath(explicit?: string): string {
  return resolve(explicit ?? process.env.SERVELAB_STORE ?? join(homedir(), '.servelab', 'servelab.db'));
}

/** Where runs write their server logs by default: `logs/` beside the store (a store in memory: the temp folder's). */
export function logsBeside(db: Db): string {
  return db.memory ? join(tmpdir(), 'servelab-logs') : join(dirname(resolve(db.name)), 'logs');
}

/**
 * Open (creating if needed) and migrate the store. WAL + busy timeout let a runner, `servelab ui` and Slurm jobs
 * share it. Opening also selects the store's redaction salt for the whole process.
 */
export function openStore(path: string, options: { readonly?: boolean } = {}): Db {
  if (options.readonly) {
    try {
      return openStoreAt(path, path, true);
    } catch (error) {
      if (!cannotWrite(error)) throw error;
      return openStoreAt(path, readableCopy(path), true);
    }
  }
  return openStoreAt(path, path, false);
}

/** Whether opening failed because the store's folder or files cannot be written (a read-only file system or file). */
function cannotWrite(error: unknown): boolean {
  const code = error instanceof UserError ? (error.cause as { code?: string } | undefined)?.code : (error as { code?: string }).code;
  return typeof code === 'string' && /^SQLITE_(CANTOPEN|READONLY|PERM)/.test(code);
}

/**
 * A WAL store needs its -shm file even to be read, and a read-only folder cannot hold one: readers then work on a
 * private copy in the temp folder (nobody can be writing a store that cannot be written), removed at exit.
 */
function readableCopy(path: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'servelab-readonly-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const copy = join(dir, basename(path));
  copyFileSync(path, copy);
  if (existsSync(`${path}-wal`)) copyFileSync(`${path}-wal`, `${copy}-wal`);
  return copy;
}

function openStoreAt(path: string, file: string, readonly: boolean): Db {
  let db: Db;
  try {
    if (!readonly) mkdirSync(dirname(path), { recursive: true });
    db = new Database(file, { readonly, fileMustExist: readonly });
  } catch (error) {
    throw new UserError(`cannot open store ${path}: ${messageOf(error)}`, 'check the path and its permissions, or pass --store PATH');
  }
  noteStorePath(path);
  try {
    db.pragma('busy_timeout = 10000');
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('foreign_keys = ON');
      migrate(db, path);
    }
    useRedactionSalt(redactionSalt(db, readonly));
  } catch (error) {
    db.close();
    throw storeFault(error, path);
  }
  return db;
}

/** The store's salt, created on first use; a read-only store that has none yet gets a random one for this process. */
function redactionSalt(db: Db, readonly: boolean): string {
  const hasTable = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'store_meta'").get() !== undefined;
  const read = (): string | undefined =>
    hasTable ? (db.prepare("SELECT value FROM store_meta WHERE key = 'redaction_salt'").get() as { value: string } | undefined)?.value : undefined;
  const existing = read();
  if (existing !== undefined || readonly || !hasTable) return existing ?? randomBytes(16).toString('hex');
  db.prepare("INSERT OR IGNORE INTO store_meta (key, value) VALUES ('redaction_salt', ?)").run(randomBytes(16).toString('hex'));
  return read()!;
}

function migrate(db: Db, path: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new UserError(
      `store ${path} has schema version ${current}, newer than this servelab understands (${latest})`,
      'upgrade servelab, or use another --store',
    );
  }
  for (const migration of migrations) {
    if (migration.version <= current) continue;
    // IMMEDIATE takes the write lock first, so two processes opening a fresh store cannot both migrate it.
    db.transaction(() => {
      const seen = db.pragma('user_version', { simple: true }) as number;
      if (seen >= migration.version) return;
      db.exec(migration.sql);
      db.pragma(`user_version = ${migration.version}`);
    }).immediate();
  }
}
