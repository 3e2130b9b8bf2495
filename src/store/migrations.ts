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
    description: 'cache state of each trial',
    sql: `
      -- How the trial met the server's prefix cache: "cold (salt N)" or "warm"; NULL for trials stored before.
      ALTER TABLE trials ADD COLUMN cache TEXT;
    `,
  },
  {
    version: 5,
    description: 'machine state per trial: GPU/host telemetry and server metrics',
    sql: `
      -- Written in the trial's own transaction. summary_json is the small part drift attribution reads;
      -- series_json (GPU and host samples) and server_metrics_json (Prometheus series) feed the report's charts.
      CREATE TABLE trial_telemetry (
        trial_id INTEGER PRIMARY KEY REFERENCES trials (id),
        summary_json TEXT NOT NULL,
        series_json TEXT NOT NULL,
        server_metrics_json TEXT NOT NULL,
        started_at_ms REAL NOT NULL
      );
    `,
  },
  {
    version: 6,
    description: 'race decisions of a tuning campaign (stopping: race)',
    sql: `
      -- kind 'eliminated': a config dropped after a pass (its trials are kept, its remaining ones skipped);
      -- kind 'stop': the race or the budget ended the run early (variant NULL), the reason says which.
      CREATE TABLE race_events (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        after_pass INTEGER NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('eliminated', 'stop')),
        variant TEXT,
        reason TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE UNIQUE INDEX race_events_once ON race_events (run_id, kind, IFNULL(variant, ''));
    `,
  },
  {
    version: 7,
    description: 'invalid trials, run leases, identity of started servers',
    sql: `
      -- Trials that may not count (failed requests, server died or stopped answering): kept with their cause, in a
      -- table of their own so no query of measured trials can pick one up by mistake.
      CREATE TABLE invalid_trials (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        variant TEXT NOT NULL,
        server_key TEXT NOT NULL,
        workload TEXT NOT NULL,
        block INTEGER NOT NULL,
        repetition INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        finished_at TEXT NOT NULL,
        completed INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        reason TEXT NOT NULL
      );
      CREATE INDEX invalid_trials_by_run ON invalid_trials (run_id, variant, workload);

      -- One runner per run: whoever holds the row runs it; a lease whose heartbeat is old or whose process is gone is taken over.
      -- lease_key: "RUN" for a whole run, "RUN:SERVER_KEY" for one Slurm job's share of it.
      CREATE TABLE run_leases (
        lease_key TEXT PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        process_start TEXT NOT NULL,
        acquired_at TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL
      );

      -- Identity of a local server process, so a leftover is stopped only when pid, start time and command line all match.
      ALTER TABLE servers ADD COLUMN pid_start TEXT;
      ALTER TABLE servers ADD COLUMN pid_cmdline TEXT;
      -- 1 for a start the plan did not foresee: the replacement of a server that died during a trial.
      ALTER TABLE servers ADD COLUMN unplanned INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 8,
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
  {
    version: 9,
    description: 'drift alarms as rows',
    sql: `
      -- One row per drift alarm the runner raised (also when --accept-drift let the run go on): what moved, by how
      -- much, against which band, and what differed; runs.message keeps the one-line text.
      CREATE TABLE drift_alarms (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        variant TEXT NOT NULL,
        workload TEXT NOT NULL,
        metric TEXT NOT NULL,
        current REAL NOT NULL,
        reference REAL NOT NULL,
        change_pct REAL NOT NULL,
        band_pct REAL NOT NULL,
        changes_json TEXT NOT NULL,
        machine_json TEXT NOT NULL,
        accepted INTEGER NOT NULL,
        message TEXT NOT NULL,
        raised_at TEXT NOT NULL
      );
      CREATE INDEX drift_alarms_run ON drift_alarms (run_id);
    `,
  },
  {
    version: 10,
    description: 'greedy outputs of the equivalence check',
    sql: `
      -- One row per pass of quality.equivalence: the same prompts sent to one variant on one server start (untimed,
      -- before its trials), at one concurrency; outputs_json holds every answer (text, token ids, finish reason).
      CREATE TABLE equivalence_outputs (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        variant TEXT NOT NULL,
        server_id INTEGER NOT NULL,
        concurrency INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        outputs_json TEXT NOT NULL
      );
      CREATE INDEX equivalence_outputs_run ON equivalence_outputs (run_id, variant);
    `,
  },
  {
    version: 11,
    description: 'scored answers of the accuracy check',
    sql: `
      -- One row per item of quality.accuracy's sample set answered by one variant on one server start (untimed,
      -- before its trials): whether the scorer found it right, and what it read from the answer.
      CREATE TABLE accuracy_items (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        variant TEXT NOT NULL,
        server_id INTEGER NOT NULL,
        started_at TEXT NOT NULL,
        item INTEGER NOT NULL,
        category TEXT,
        correct INTEGER NOT NULL,
        extracted TEXT
      );
      CREATE INDEX accuracy_items_run ON accuracy_items (run_id, variant);
    `,
  },
  {
    version: 12,
    description: "each request's dataset category, conversation turn, cached prompt tokens and resend",
    sql: `
      -- What a request was beside its timings, for the request-level export (empty in rows stored before).
      ALTER TABLE samples ADD COLUMN category TEXT;
      ALTER TABLE samples ADD COLUMN turn INTEGER;
      ALTER TABLE samples ADD COLUMN cached_tokens INTEGER;
      ALTER TABLE samples ADD COLUMN resent INTEGER;
    `,
  },
  {
    version: 13,
    description: 'the lane each trial and server ran on',
    sql: `
      -- lanes: (several servers at once): the lane's index in the experiment's lanes, from 0; NULL without lanes.
      ALTER TABLE trials ADD COLUMN lane INTEGER;
      ALTER TABLE invalid_trials ADD COLUMN lane INTEGER;
      ALTER TABLE servers ADD COLUMN lane INTEGER;
    `,
  },
  {
    version: 14,
    description: 'servelab bisect: its setup, rounds and answer',
    sql: `
      -- One bisect of a current (slow) run against a reference run: what it compares (variant, workload, metric,
      -- tolerance, the settable differences) in setup_json. Each round is one run of generated variants (the current
      -- configuration with a subset restored); the answer is computed from the rounds' trials, a resume continues.
      CREATE TABLE bisects (
        id INTEGER PRIMARY KEY,
        created_at TEXT NOT NULL,
        current_run_id INTEGER NOT NULL REFERENCES runs (id),
        reference_run_id INTEGER NOT NULL REFERENCES runs (id),
        setup_json TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('running', 'done', 'stopped')),
        message TEXT
      );
      CREATE INDEX bisects_by_runs ON bisects (current_run_id, reference_run_id);
      CREATE TABLE bisect_rounds (
        bisect_id INTEGER NOT NULL REFERENCES bisects (id),
        round INTEGER NOT NULL,
        run_id INTEGER NOT NULL REFERENCES runs (id),
        tests_json TEXT NOT NULL,
        PRIMARY KEY (bisect_id, round)
      );
      CREATE INDEX bisect_rounds_by_run ON bisect_rounds (run_id);
    `,
  },
  {
    version: 15,
    description: "a search's decisions, one row per block, so a resumed run replays them",
    sql: `
      -- What the search strategy decided after each block (points to measure, dropped, leaders, done): JSON.
      CREATE TABLE search_steps (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        block INTEGER NOT NULL,
        step_json TEXT NOT NULL,
        spent_s REAL NOT NULL,
        created_at TEXT NOT NULL,
        UNIQUE (run_id, block)
      );
    `,
  },
  {
    version: 16,
    description: 'which Slurm lane (job) claimed each block of a run',
    sql: `
      -- Slurm lanes: each job runs its lane in its own process and claims whole blocks here; a claim counts only while
      -- its lane's lease (run_leases, scope lane:N) is live, so a dead job's unmeasured blocks go to the other lanes.
      CREATE TABLE lane_claims (
        run_id INTEGER NOT NULL REFERENCES runs(id),
        block INTEGER NOT NULL,
        lane INTEGER NOT NULL,
        claimed_at TEXT NOT NULL,
        PRIMARY KEY (run_id, block)
      );
    `,
  },
  {
    version: 17,
    description: 'the trial in flight per lane, not per run',
    sql: `
      -- Lanes measure trials at the same time: one progress row per run overwrote each lane's with the other's.
      -- lane is 0 for a run without lanes (one stream of trials); lane_name is null there.
      CREATE TABLE progress_by_lane (
        run_id INTEGER NOT NULL REFERENCES runs (id),
        lane INTEGER NOT NULL,
        lane_name TEXT,
        trial_label TEXT NOT NULL,
        completed INTEGER NOT NULL,
        total INTEGER NOT NULL,
        output_tokens_per_second REAL NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (run_id, lane)
      );
      INSERT INTO progress_by_lane (run_id, lane, trial_label, completed, total, output_tokens_per_second, updated_at)
        SELECT run_id, 0, trial_label, completed, total, output_tokens_per_second, updated_at FROM progress;
      DROP TABLE progress;
      ALTER TABLE progress_by_lane RENAME TO progress;
    `,
  },
];
