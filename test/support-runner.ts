/** A `servelab run` in the background with a read-only view of its store, for tests that act on a live runner. */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { TestContext } from 'node:test';
import Database from 'better-sqlite3';
import { type CliResult, SERVELAB } from './support-experiment.js';
import { pollFor, unlessNoSchema } from './support-wait.js';

/** `servelab run ARGS` on `store` with `env` added; SIGCONT before SIGKILL at the end, in case a test paused it. */
export interface LiveRunner {
  child: ChildProcess;
  db: Database.Database;
  done: Promise<CliResult>;
  stderr: () => string;
}

export async function startRunner(t: TestContext, args: string[], store: string, env: Record<string, string> = {}): Promise<LiveRunner> {
  const child = spawn(process.execPath, [SERVELAB, 'run', ...args], {
    env: { ...process.env, SERVELAB_STORE: store, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.after(() => {
    child.kill('SIGCONT');
    child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const done = new Promise<CliResult>((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
  await pollFor('the store', () => (existsSync(store) ? true : undefined), 30_000);
  const db = new Database(store, { readonly: true, fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  t.after(() => db.close());
  return { child, db, done, stderr: () => stderr };
}

/** A row of a running runner's store; undefined until the runner has created the schema and the row. */
export function storeRow<T>(db: Database.Database, sql: string, ...params: unknown[]): T | undefined {
  return unlessNoSchema(() => db.prepare(sql).get(...params) as T | undefined, undefined);
}
