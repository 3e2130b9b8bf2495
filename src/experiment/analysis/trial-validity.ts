import { earlyStopLine, overLengthLine, prefixCacheLine, tokenCountLine } from '../../metrics/table.js';
import type { LevelResult } from '../../metrics/types.js';
import { COLD_CACHE_MAX_HIT_RATE, COLD_CACHE_OPENING_TOKENS } from '../../util/defaults.js';
import { formatNumber, formatShare } from '../../util/format.js';

/** What a level's measurement was asked to be, and how the caller names the settings in its messages. */
export interface ValidityOptions {
  /** ignore_eos was sent: every request should produce exactly its requested length. */
  ignoreEos: boolean;
  /** With ignoreEos: a request that stopped short makes the level invalid (default true). */
  requireFullOutput?: boolean;
  /** Most failed (and, separately, resent) requests allowed, as a fraction of those sent. */
  maxFailedFraction: number;
  /** The trial was meant to meet a cold prefix cache: the experiment's `client.cache` mode that promised it. */
  coldCache?: 'cold' | 'reset';
  /** Setting names as the user writes them (defaults: the experiment file's keys). */
  names?: Partial<Record<'requireFullOutput' | 'tokenCounts' | 'tokenizer' | 'maxFailedFraction', string>>;
}

const FILE_NAMES = {
  requireFullOutput: 'client.requireFullOutput: false',
  tokenCounts: 'client.tokenCounts',
  tokenizer: 'client.tokenizer',
  maxFailedFraction: 'maxFailedFraction',
};

/**
 * Whether one level's result is a valid measurement: undefined when it is, else why not, in one line. The one
 * judgement `bench` (its exit status) and the experiment runner (a trial's validity) share. Pure.
 */
export function levelValidity(level: LevelResult, options: ValidityOptions): string | undefined {
  const names = { ...FILE_NAMES, ...options.names };
  if (level.stopped !== undefined) return level.stopped;
  const sent = level.completed + level.failed;
  const noOutput = level.errorsByKind['no-output'] ?? 0;
  if (noOutput > 0 && level.completed === 0) return `the server generated no output tokens for ${noOutput} of ${sent} requests`;
  if (level.completed === 0) return sent === 0 ? 'no request was measured' : `all ${sent} requests failed`;
  if (level.failed > options.maxFailedFraction * sent) {
    const kinds = Object.entries(level.errorsByKind)
      .filter(([kind]) => kind !== 'aborted')
      .map(([kind, count]) => `${kind} ${count}`)
      .join(', ');
    return `${level.failed} of ${sent} requests failed (${kinds}), more than ${names.maxFailedFraction} ${options.maxFailedFraction} allows (a server that closes every streamed connection, as llama-server does, needs --no-keep-alive; profile llamacpp sets it)`;
  }
  const resends = level.resends ?? 0;
  if (resends > options.maxFailedFraction * sent) {
    return `${resends} of ${sent} requests were sent again after their connection closed under them, more than ${names.maxFailedFraction} ${options.maxFailedFraction} allows (a server that closes every streamed connection, as llama-server does, needs --no-keep-alive; profile llamacpp sets it)`;
  }
  // Before the early stop: output lengths are judged by a count that must first be trusted.
  const counts = level.tokenCounts;
  if (counts && !counts.trusted && counts.disagreeing > 0) {
    const words = counts.words === undefined ? '' : `; their text has ${formatNumber(counts.words)} words`;
    return `${tokenCountLine(counts)}${words}: say which source to trust with ${names.tokenCounts}, or let ${names.tokenizer} count the text`;
  }
  const output = level.outputLength;
  // The mirror of an early stop, whatever ignore_eos: max_tokens caps every request, so more is never the work asked
  // for, and more tokens in the same time would pass as faster.
  if (output?.overLengthRequests) {
    return `${overLengthLine(output, counts?.method)}: the server generated more than max_tokens allows, or counts tokens differently from their text (${names.tokenizer} counts them here), and unequal work is not comparable`;
  }
  if (options.ignoreEos && options.requireFullOutput !== false && output && output.shortRequests > 0) {
    return `${earlyStopLine(output)} although ignore_eos was asked: the server does not honour it, and unequal work is not comparable (${names.requireFullOutput} accepts it)`;
  }
  // A cold trial's first request must find nothing cached; later ones may reuse the trial's own prefixes.
  const cache = level.prefixCache;
  const coldHitRate = cache && (cache.firstRequestHitRate ?? cache.hitRate);
  // Server counters see only the whole trial: a workload built to reuse its own prefixes may hit its designed rate.
  const ownReuse = cache?.firstRequestHitRate === undefined ? (cache?.targetHitRate ?? 0) : 0;
  // The first request's prompt is known: a fixed opening (BOS, template head, the trial's salt) may be cached too.
  const promptTokens = cache?.firstRequestHitRate === undefined ? undefined : cache.firstRequestPromptTokens;
  const opening = promptTokens ? Math.min(1, COLD_CACHE_OPENING_TOKENS / promptTokens) : 0;
  const allowed = COLD_CACHE_MAX_HIT_RATE + ownReuse + opening;
  if (options.coldCache && cache && coldHitRate !== undefined && coldHitRate > allowed) {
    const first = cache.firstRequestHitRate === undefined ? '' : `, ${formatShare(cache.firstRequestHitRate)} for its first request`;
    const bound =
      ownReuse > 0
        ? `its designed ${formatShare(ownReuse)} plus ${COLD_CACHE_MAX_HIT_RATE * 100}%`
        : opening > 0
          ? `${COLD_CACHE_MAX_HIT_RATE * 100}% plus ${COLD_CACHE_OPENING_TOKENS} opening tokens`
          : `${COLD_CACHE_MAX_HIT_RATE * 100}%`;
    return `${prefixCacheLine(cache)}${first} although cache: ${options.coldCache} (at most ${bound}): a warm cache it should not have is not a measurement`;
  }
  return undefined;
}
