import type { Command } from 'commander';
import { parseDurationMs } from '../../config/duration.js';
import { waitKey } from '../../launch/config.js';
import { loadUserProfiles, resolveProfile, userProfilesPath } from '../../profiles/user.js';
import { openHistory, previousStartupOptions, recordStartupOutcome } from '../../ready/history.js';
import { createProgressReporter } from '../../ready/progress.js';
import { describeReady, failureJson } from '../../ready/report.js';
import { normalizeBaseUrl, waitForReady } from '../../ready/wait.js';
import { DEFAULT_READY_TIMEOUT } from '../../util/defaults.js';
import { terminalText } from '../../util/terminal-text.js';

interface WaitFlags {
  profile: string;
  profiles?: string;
  timeout: string;
  verify?: boolean;
  model?: string;
  json?: boolean;
  store?: string;
}

export function registerWait(program: Command): void {
  program
    .command('wait')
    .description('Wait until the server at URL is ready: healthy AND serving (lists a model, generates one token)')
    .argument('<url>', 'server base URL, e.g. http://127.0.0.1:8000 (a trailing /v1 is ignored)')
    .option('--profile <name>', 'server profile: vllm, sglang, tgi, llamacpp, ollama, openai, simulator, or one of yours', 'openai')
    .option('--profiles <file>', 'YAML file of user profiles (default: $SERVELAB_PROFILES or ~/.servelab/profiles.yaml)')
    .option('--timeout <duration>', 'give up after this long: 90s, 15m, 1h, 500ms (a bare number is seconds)', DEFAULT_READY_TIMEOUT)
    .option('--verify', 'check /v1/models and one tiny generation after health (default for OpenAI-compatible profiles)')
    .option('--no-verify', 'only check the health endpoint (skip /v1/models and the one-token generation)')
    .option('--model <name>', 'model for the generation check (default: the first one /v1/models lists)')
    .option('--json', 'print the result (or the failure) as JSON on stdout')
    .option('--store <path>', 'store with startup history (default: $SERVELAB_STORE or ~/.servelab/servelab.db)')
    .addHelpText(
      'after',
      `
Polls every 20 ms at first, doubling up to 80 ms (about 40 ms late on average). Progress goes to stderr.
Exit codes: 0 ready, 2 bad usage (e.g. invalid URL), 3 timeout (incl. never reachable),
1 wrong answer (HTML page, not an OpenAI server, generation refused), 130 interrupted.`,
    )
    .action(async (url: string, flags: WaitFlags) => {
      const baseUrl = normalizeBaseUrl(url);
      const timeoutMs = parseDurationMs(flags.timeout);
      const profile = resolveProfile(flags.profile, loadUserProfiles(userProfilesPath(flags.profiles)));
      const db = openHistory(flags.store);
      const key = waitKey(profile.name, baseUrl);
      const previous = previousStartupOptions(db, key);
      const progress = createProgressReporter();
      const interrupt = new AbortController();
      const onSignal = () => interrupt.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const startedAt = new Date();
      try {
        const result = await waitForReady({
          baseUrl,
          profile,
          timeoutMs,
          ...(flags.verify !== undefined && { verifyServing: flags.verify }),
          ...(flags.model && { model: flags.model }),
          ...previous,
          onProgress: progress.report,
          signal: interrupt.signal,
        });
        progress.finish();
        // Report first: scripts are waiting on this line, the history can be written a moment later.
        process.stdout.write(flags.json ? `${JSON.stringify({ ok: true, ...result })}\n` : `${terminalText(describeReady(result))}\n`);
        if (db) recordStartupOutcome(db, key, startedAt, result);
      } catch (error) {
        progress.finish();
        if (db) recordStartupOutcome(db, key, startedAt, error);
        if (flags.json) process.stdout.write(`${JSON.stringify(failureJson(error))}\n`);
        throw error;
      } finally {
        process.off('SIGINT', onSignal);
        process.off('SIGTERM', onSignal);
        db?.close();
      }
    });
}
