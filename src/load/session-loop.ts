import { UserError } from '../util/errors.js';
import { ExitCode } from '../util/exit.js';
import { type LevelPlan, type LevelRun, sleepUntil } from './level.js';
import type { PromptItem } from './prompts.js';
import { type RequestContext, type RequestOutcome, streamRequest } from './request.js';
import type { ChatMessage } from './tokenizers/model.js';

/**
 * The closed loop of multi-turn sessions (turns planned by load/sessions.ts): `concurrency` sessions in flight, each
 * sending its turns one after another — after its think time, with the conversation so far, the server's own
 * answers included — so turn k+1's prompt extends turn k's and a prefix cache can serve it. A failed turn ends
 * its session: its later turns are never sent (the level's `turns.endedByFailure` counts them).
 */
export async function runSessionLevel(
  context: RequestContext,
  concurrency: number,
  turns: readonly PromptItem[],
  render: (history: readonly ChatMessage[], turn: PromptItem) => PromptItem,
  onDone?: (outcome: RequestOutcome) => void | Promise<void>,
): Promise<LevelRun> {
  const outcomes: RequestOutcome[] = [];
  const started = performance.now();
  const sessions = groupSessions(turns);
  const live: RequestContext = { ...context, collectText: true };
  let next = 0;
  const session = async () => {
    while (next < sessions.length && !context.signal?.aborted) {
      const indices = sessions[next++]!;
      const history: ChatMessage[] = [];
      let previousTokens = 0;
      for (const index of indices) {
        const turn = turns[index]!;
        const thinkMs = turn.session?.thinkMs ?? 0;
        if (thinkMs > 0) await sleepUntil(performance.now() + thinkMs, context.signal);
        if (context.signal?.aborted) break;
        // What a cache that kept the previous turn (prompt and answer) holds of this one.
        const item = { ...render(history, turn), targetCachedTokens: previousTokens };
        const outcome = await streamRequest(live, item, index);
        outcomes.push(outcome);
        await onDone?.(outcome);
        if (outcome.sample.error) break;
        history.push({ role: 'user', content: turn.prompt }, { role: 'assistant', content: outcome.state.text });
        previousTokens = outcome.sample.inputTokens + outcome.sample.outputTokens;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, sessions.length) }, session));
  outcomes.sort((a, b) => a.sample.index - b.sample.index);
  return { outcomes, durationS: (performance.now() - started) / 1000 };
}

/** Indices of each session's turns, sessions in order of their first turn. Pure. */
export function groupSessions(turns: readonly PromptItem[]): number[][] {
  const groups = new Map<number, number[]>();
  turns.forEach((turn, index) => {
    const id = turn.session?.id ?? -1 - index;
    const group = groups.get(id);
    if (group) group.push(index);
    else groups.set(id, [index]);
  });
  return [...groups.values()];
}

/** Sessions run in a closed loop in this thread (each turn waits for the last answer): no rate, no load workers. */
export function checkSessionLevels(levels: readonly LevelPlan[], workerCount: number): void {
  if (levels.some((level) => level.rate)) {
    throw new UserError(
      'multi-turn sessions run in a closed loop: concurrency is sessions in flight',
      'use a concurrency or sweep workload (bench --sessions N)',
      ExitCode.usage,
    );
  }
  if (workerCount > 1) {
    throw new UserError('multi-turn sessions run in one load thread', 'leave workers at 1 (bench --workers 1, client.workers: 1)', ExitCode.usage);
  }
}
