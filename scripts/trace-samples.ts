import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TRACE_BLOCK_TOKENS } from '../src/load/trace/prompts.js';
import { mulberry32 } from '../src/util/random.js';

/**
 * Writes the small sample traces of examples/traces/ (the tests and the docs replay them), in the published formats
 * (sources in src/load/trace/parse.ts). Generated, not downloaded: short, seeded, and easy on a simulator.
 * Run: `npx tsc -p . && node dist/scripts/trace-samples.js` from the repository root.
 */

const OUT = 'examples/traces';
const random = mulberry32(26);
const between = (min: number, max: number): number => min + Math.floor(random() * (max - min + 1));

/** Bursty arrivals over `spanMs`: a few bursts of requests close together, quiet gaps between them. */
function arrivals(count: number, spanMs: number): number[] {
  const times = Array.from({ length: count }, (_, index) => {
    const burst = Math.floor((index * 4) / count);
    return Math.round((burst * spanMs) / 4 + random() * (spanMs / 8));
  });
  return times.sort((a, b) => a - b);
}

/**
 * Mooncake: 24 requests in 6 s. Three "system prompts" of one or two full 512-token blocks are shared by the requests
 * of their group (as the conversation trace's block 0 is shared); the rest of each prompt is its own blocks.
 */
function mooncake(): string {
  const prefixes = [[0, 1], [2], [3, 4]];
  let nextId = 5;
  return arrivals(24, 6000)
    .map((timestamp, index) => {
      const prefix = prefixes[index % prefixes.length]!;
      const own = between(1, 2);
      const inputLength = (prefix.length + own - 1) * TRACE_BLOCK_TOKENS + between(40, TRACE_BLOCK_TOKENS);
      const hashIds = [...prefix, ...Array.from({ length: own }, () => nextId++)];
      return JSON.stringify({ timestamp, input_length: inputLength, output_length: between(4, 24), hash_ids: hashIds });
    })
    .join('\n');
}

/** BurstGPT: 30 requests in 10 s (seconds), both models and log types; one failed request (Response tokens 0). */
function burstgpt(): string {
  const rows = arrivals(30, 10_000).map((ms, index) => {
    const request = between(20, 600);
    const response = index === 7 ? 0 : between(4, 32);
    const model = index % 3 === 0 ? 'GPT-4' : 'ChatGPT';
    const logType = index % 4 === 0 ? 'API log' : 'Conversation log';
    return `${(ms / 1000).toFixed(3)},${model},${request},${response},${request + response},${logType}`;
  });
  return ['Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type', ...rows].join('\n');
}

/** Azure LLM inference: 30 requests in 10 s, date-times with 7 fractional digits as the 2023 files have. */
function azure(): string {
  const start = Date.UTC(2023, 10, 16, 18, 17, 3);
  const rows = arrivals(30, 10_000).map((ms) => {
    const at = new Date(start + ms).toISOString().replace('T', ' ').replace('Z', '');
    return `${at}${String(between(0, 9999)).padStart(4, '0')},${between(20, 800)},${between(4, 32)}`;
  });
  return ['TIMESTAMP,ContextTokens,GeneratedTokens', ...rows].join('\n');
}

mkdirSync(OUT, { recursive: true });
writeFileSync(join(OUT, 'mooncake-sample.jsonl'), `${mooncake()}\n`);
writeFileSync(join(OUT, 'burstgpt-sample.csv'), `${burstgpt()}\n`);
writeFileSync(join(OUT, 'azure-sample.csv'), `${azure()}\n`);
process.stdout.write(`wrote ${OUT}/mooncake-sample.jsonl, burstgpt-sample.csv, azure-sample.csv\n`);
