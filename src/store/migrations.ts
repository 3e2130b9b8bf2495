/**
 * Schema history. Each entry runs once, in order, inside a transaction; `PRAGMA user_version` records how far a
 * database has come. Never edit a released migration: append a new one.
 */
export const migrations: ReadonlyArray<{ version: number; description: string; sql: string }> = [
  {
    version: 1,
    description: 'server startups (time-to-ready prediction)',
    sql: `
      CREATE TABLE startups (
        id INTEGER PRIMARY KEY,
        config_key TEXT NOT NULL,
        started_at TEXT NOT NULL,
        ready_ms REAL,
        outcome TEXT NOT NULL CHECK (outcome IN ('ready', 'failed')),
        phases_json TEXT NOT NULL,
        run_id INTEGER
      );
      CREATE INDEX startups_by_config ON startups (config_key, id);
    `,
  },
];
