import type { Command } from 'commander';
import { guessProfileName } from '../../profiles/log-guess.js';
import { type LogReplay, replayLog } from '../../profiles/replay.js';
import type { ServerProfile } from '../../profiles/types.js';
import { loadUserProfiles, resolveProfile, userProfilesPath } from '../../profiles/user.js';
import { versionNote } from '../../profiles/version-note.js';
import { messageOf, UserError } from '../../util/errors.js';
import { ExitCode } from '../../util/exit.js';
import { formatSeconds } from '../../util/format.js';
import { readLogLines } from '../../util/log-tail.js';
import { redactor } from '../../util/redact.js';
import { terminalText } from '../../util/terminal-text.js';

interface LogFlags {
  profile?: string;
  profiles?: string;
}

export function registerLog(program: Command): void {
  program
    .command('log')
    .description('Replay a server log through a profile: the startup phases it shows and the cause `launch` would report')
    .argument('<file>', 'server log (a `servelab launch` log, or the output of vllm serve / sglang.launch_server / ...)')
    .option('--profile <name>', 'server profile (default: guessed from the log: vllm, sglang, tgi, llamacpp, ollama, else openai)')
    .option('--profiles <file>', 'YAML file of user profiles (default: $SERVELAB_PROFILES or ~/.servelab/profiles.yaml)')
    .addHelpText(
      'after',
      `
Phases show the log's own times where its lines carry them, else line numbers. Of a servelab launch log only the
last launch is read. Exit codes: 0 no fatal line, 4 the log shows a fatal cause, 2 bad usage (unreadable file,
unknown profile).`,
    )
    .action((file: string, flags: LogFlags) => {
      const lines = readLines(file);
      const guessed = flags.profile === undefined;
      const profile = resolveProfile(flags.profile ?? guessProfileName(lines), loadUserProfiles(userProfilesPath(flags.profiles)));
      const replay = replayLog(profile, lines);
      process.stdout.write(terminalText(describeReplay(profile, replay, guessed)));
      if (replay.fatal) process.exitCode = ExitCode.serverDied;
    });
}

function readLines(file: string): string[] {
  try {
    return readLogLines(file);
  } catch (error) {
    throw new UserError(`cannot read the log ${file}: ${messageOf(error)}`, 'give the path of a server log file', ExitCode.usage);
  }
}

/** The replay as text: profile line, one line per phase (time from the first phase, or line number), the cause. */
export function describeReplay(profile: ServerProfile, replay: LogReplay, guessed: boolean): string {
  const out: string[] = [];
  const checked = profile.checkedVersions ? `, patterns checked against ${profile.checkedVersions}` : '';
  out.push(`profile: ${profile.name}${guessed ? ' (guessed from the log; --profile chooses)' : ''}${checked}`);
  const note = versionNote(profile, replay.versions);
  if (note) out.push(`note: ${note}`);
  const timed = replay.phases.length > 0 && replay.phases.every((phase) => phase.atMs !== undefined);
  const start = replay.phases[0]?.atMs ?? 0;
  out.push(replay.phases.length === 0 ? 'phases: none recognised' : `phases${timed ? ' (time since the first, and how long each took)' : ''}:`);
  const width = Math.max(0, ...replay.phases.map((phase) => phase.name.length));
  const lineWidth = Math.max(0, ...replay.phases.map((phase) => `line ${phase.lineNumber}`.length));
  replay.phases.forEach((phase, index) => {
    const next = replay.phases[index + 1];
    const at = timed ? `+${formatSeconds(phase.atMs! - start)}`.padEnd(8) : '';
    const took = timed && next ? `  (${formatSeconds(next.atMs! - phase.atMs!)})` : '';
    out.push(`  ${at}${phase.name.padEnd(width)}  ${`line ${phase.lineNumber}`.padEnd(lineWidth)}${took}`);
  });
  if (replay.fatal) {
    out.push(`cause: ${replay.fatal.name} (line ${replay.fatal.lineNumber})`);
    out.push(`  ${redactor().text(replay.fatal.line.trim())}`);
    out.push(`  next: ${replay.fatal.hint}`);
  } else {
    out.push('cause: none (no fatal line: launch would not fail on this log)');
  }
  return `${out.join('\n')}\n`;
}
