/**
 * Sum of every series of each metric in a Prometheus text exposition, keyed by metric name (labels dropped):
 * a multi-engine vLLM exposes one series per engine and the benchmark wants the server total.
 */
export function parsePrometheusTotals(text: string): Map<string, number> {
  const totals = new Map<string, number>();
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (line === '' || line.startsWith('#')) continue;
    const nameEnd = line.search(/[{\s]/);
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    const afterLabels = line[nameEnd] === '{' ? line.slice(labelsEnd(line, nameEnd) + 1) : line.slice(nameEnd);
    const value = Number(afterLabels.trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    totals.set(name, (totals.get(name) ?? 0) + value);
  }
  return totals;
}

/**
 * Sum of the series of metric `name` per value of its label `label` (e.g. vLLM's per-position counter by
 * `position`); series without that label are skipped.
 */
export function parsePrometheusByLabel(text: string, name: string, label: string): Map<string, number> {
  const sums = new Map<string, number>();
  const labelPattern = new RegExp(`(?:^|,)\\s*${label}\\s*=\\s*"((?:[^"\\\\]|\\\\.)*)"`);
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim();
    if (!line.startsWith(`${name}{`)) continue;
    const close = labelsEnd(line, name.length);
    const value = Number(
      line
        .slice(close + 1)
        .trim()
        .split(/\s+/)[0],
    );
    const match = labelPattern.exec(line.slice(name.length + 1, close));
    if (!match || !Number.isFinite(value)) continue;
    sums.set(match[1]!, (sums.get(match[1]!) ?? 0) + value);
  }
  return sums;
}

/** Index of the `}` closing the label set that opens at `open`, skipping quoted label values (which may hold `}`). */
function labelsEnd(line: string, open: number): number {
  let quoted = false;
  for (let i = open + 1; i < line.length; i++) {
    const char = line[i];
    if (quoted) {
      if (char === '\\') i++;
      else if (char === '"') quoted = false;
    } else if (char === '"') quoted = true;
    else if (char === '}') return i;
  }
  return line.length;
}
