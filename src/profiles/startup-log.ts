import { classifyLogLine } from './classify.js';
import type { ServerProfile } from './types.js';

export interface FatalLine {
  name: string;
  hint: string;
  line: string;
  /** Position in the profile's fatal list: lower is more specific. */
  rank: number;
}

/** A traceback's source line (`raise RuntimeError(f"NCCL error: …")`) gives way to the message it raised. */
const SOURCE_ECHO = /\braise \w/;

/** What one line changed: a new phase began, or the first fatal line of a failure was seen. */
export type StartupLogChange = { kind: 'phase'; name: string } | { kind: 'first-fatal' } | undefined;

/**
 * The startup reading of a server log, line by line, shared by `launch` (live) and `servelab log` (replay): the
 * current phase, and the cause of a failure. A failure prints several fatal lines (the engine's wrapper, a
 * Traceback, the exception); the most specific one seen names it, so "CUDA out of memory" beats "engine failed to
 * start" whichever comes first.
 */
export class StartupLog {
  private currentPhase: string | undefined;
  private readonly seenPhases = new Set<string>();
  private best: FatalLine | undefined;

  constructor(private readonly profile: ServerProfile) {}

  get fatal(): FatalLine | undefined {
    return this.best;
  }

  accept(line: string): StartupLogChange {
    const found = classifyLogLine(this.profile, line);
    if (found?.kind === 'phase' && found.name !== this.currentPhase) {
      this.currentPhase = found.name;
      this.seenPhases.add(found.name);
      return { kind: 'phase', name: found.name };
    }
    if (found?.kind !== 'fatal') return undefined;
    if (this.profile.fatalPatterns[found.rank]?.notAfterPhases?.some((phase) => this.seenPhases.has(phase))) return undefined;
    const first = this.best === undefined;
    if (first || found.rank < this.best!.rank || (found.rank === this.best!.rank && SOURCE_ECHO.test(this.best!.line))) {
      this.best = { name: found.name, hint: found.hint, line, rank: found.rank };
    }
    return first ? { kind: 'first-fatal' } : undefined;
  }
}
