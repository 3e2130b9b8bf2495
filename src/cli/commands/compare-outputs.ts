import type { Command } from 'commander';
import { readOutputsFile } from '../../load/outputs-file.js';
import { compareOutputs, type OutputMatch } from '../../metrics/output-match.js';
import { formatAgreement, formatNumber } from '../../util/format.js';
import { terminalText } from '../../util/terminal-text.js';

/** Text lines of a comparison: shares, divergence, and the earliest differing pair. */
export function formatOutputMatch(match: OutputMatch, names: [string, string]): string {
  const lines = [
    `prompts compared   ${match.prompts}${match.failed > 0 ? ` (${match.failed} left out: a request failed)` : ''}${match.unmatched > 0 ? ` (${match.unmatched} on one side only)` : ''}`,
    `identical outputs  ${formatAgreement(match.identicalShare)} (${match.identical}/${match.prompts})`,
    `token agreement    ${formatAgreement(match.tokenAgreement)} (by ${match.unit}, up to the shorter output)`,
    `first divergence   ${match.firstDivergence ? `median ${formatNumber(match.firstDivergence.median)}, min ${match.firstDivergence.min} ${match.unit === 'words' ? 'words' : 'tokens'}` : '— (none differ)'}`,
  ];
  if (match.earliest) {
    const { prompt, position, a, b } = match.earliest;
    lines.push(
      `earliest difference: prompt ${prompt} at ${position}`,
      `  ${names[0]}: ${JSON.stringify(a.slice(0, 200))}`,
      `  ${names[1]}: ${JSON.stringify(b.slice(0, 200))}`,
    );
  }
  return `${lines.join('\n')}\n`;
}

export function registerCompareOutputs(program: Command): void {
  program
    .command('compare-outputs')
    .description('Compare the answers of two `bench --save-outputs` files, prompt by prompt')
    .argument('<a>', 'outputs JSONL (the reference)')
    .argument('<b>', 'outputs JSONL to compare with it')
    .option('--json', 'print the comparison as JSON')
    .addHelpText(
      'after',
      `
Both files should come from the same prompts (same prompt source, seed and output length, temperature 0): answers
are matched by prompt index. Token agreement compares token ids where both files have them, else words.
Exit status: 0 (the figures are the answer), 2 usage (a file missing or not an outputs file).`,
    )
    .action((a: string, b: string, flags: { json?: boolean }) => {
      const match = compareOutputs(readOutputsFile(a), readOutputsFile(b));
      process.stdout.write(flags.json ? `${JSON.stringify(match, null, 2)}\n` : terminalText(formatOutputMatch(match, [a, b])));
    });
}
