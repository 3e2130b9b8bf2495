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
  {
    version: 2,
    description: 'experiments, runs, trials, fingerprints, samples, live server status',
    sql: `
      CREATE TABLE experiments (
        id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        file_path TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX experiments_by_name ON experiments (name, file_path);

      CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        experiment_id INTEGER NOT NULL REFERENCES experiments (id),
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed', 'interrupted', 'drift')),
        message TEXT,
        servelab_version TEXT NOT NULL,
        git_sha TEXT,
        -- The resolved experiment (after defaults and grid expansion) and the trial plan, so --resume replays exactly.
        config_json TEXT NOT NULL,
        plan_json TEXT NOT NULL
      );

      CREATE TABLE fingerprints (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        json TEXT NOT NULL
      );

      CREATE TABLE trials (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        variant TEXT NOT NULL,
        server_key TEXT NOT NULL,
        workload TEXT NOT NULL,
        concurrency INTEGER,
        params_json TEXT NOT NULL,
        block INTEGER NOT NULL,
        repetition INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        metrics_json TEXT NOT NULL,
        fingerprint_id INTEGER NOT NULL REFERENCES fingerprints (id),
        -- One row per planned trial: a resumed run can never record the same trial twice.
        UNIQUE (run_id, variant, workload, block, repetition)
      );
      CREATE INDEX trials_by_variant ON trials (variant, workload);

      CREATE TABLE samples (
        trial_id INTEGER NOT NULL REFERENCES trials (id),
        idx INTEGER NOT NULL,
        sent_at_ms REAL NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        ttft_ms REAL,
        tpot_ms REAL,
        e2e_ms REAL,
        itl_json TEXT NOT NULL,
        error_kind TEXT,
        error_message TEXT,
        PRIMARY KEY (trial_id, idx)
      );

      -- Live state of each server of a run, for progress output and \`servelab ui\`.
      CREATE TABLE servers (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        server_key TEXT NOT NULL,
        label TEXT NOT NULL,
        host TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('starting', 'ready', 'failed', 'stopped')),
        phase TEXT NOT NULL,
        started_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        ready_ms REAL,
        predicted_ready_ms REAL,
        log_path TEXT NOT NULL,
        message TEXT
      );

      -- Latest progress of the trial in flight, per run.
      CREATE TABLE progress (
        run_id INTEGER PRIMARY KEY REFERENCES runs (id),
        trial_label TEXT NOT NULL,
        completed INTEGER NOT NULL,
        total INTEGER NOT NULL,
        output_tokens_per_second REAL NOT NULL,
        updated_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 3,
    description: 'verdicts of a finished run; process ids of local servers',
    sql: `
      -- Per-variant verdicts vs the baseline (JSON array), written by finalizeRun when every planned trial is stored.
      ALTER TABLE runs ADD COLUMN verdict_json TEXT;
      CREATE INDEX runs_by_experiment ON runs (experiment_id, id);
      -- A killed runner leaves its server running (own process group); a resume on the same host stops it by pid
      -- and refuses to start while the recorded runner process is still alive.
      ALTER TABLE servers ADD COLUMN pid INTEGER;
      ALTER TABLE servers ADD COLUMN runner_pid INTEGER;
    `,
  },
  {
    version: 4,
    description: 'per-store facts: the salt of redaction markers',
    sql: `
      -- redaction_salt keys the HMAC of <redacted:…> markers: equal secrets give equal markers within one store
      -- (so diff can say "changed"), while a marker cannot be checked against guessed values without the salt.
      CREATE TABLE store_meta (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
];
