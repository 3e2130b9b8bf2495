/** Parsers of the nvidia-smi and nvcc text a fingerprint records (topology, NVLink, driver CUDA and nvcc versions). */

/**
 * The connection matrix of `nvidia-smi topo -m`: for each pair of GPUs the link kind (X, NV18, PIX, SYS…), plus
 * each GPU's CPU and NUMA affinity. The header is underlined with ANSI escapes on a terminal-like output; they are
 * removed. NIC rows and the legend are ignored.
 */
export function parseTopology(text: string): { links: Record<string, string>; affinity: Record<string, string> } {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: nvidia-smi colours the header with ANSI escapes
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  const links: Record<string, string> = {};
  const affinity: Record<string, string> = {};
  const headerAt = lines.findIndex((line) => /^\s*GPU0\b/.test(line));
  if (headerAt < 0) return { links, affinity };
  const columns = lines[headerAt]!.trim()
    .split('\t')
    .map((cell) => cell.trim());
  for (const line of lines.slice(headerAt + 1)) {
    if (line.trim() === '' || line.startsWith('Legend')) break;
    const cells = line.split('\t').map((cell) => cell.trim());
    const rowName = cells[0]!;
    if (!/^GPU\d+$/.test(rowName)) continue;
    columns.forEach((column, position) => {
      const value = cells[position + 1];
      if (value === undefined) return;
      if (/^(GPU|NIC)\d+$/.test(column)) {
        if (column !== rowName) links[`${rowName}-${column}`] = value;
      } else if (column === 'CPU Affinity' || column === 'NUMA Affinity') {
        affinity[`${rowName} ${column}`] = value;
      }
    });
  }
  return { links, affinity };
}

/**
 * `nvidia-smi nvlink -s`: per GPU, its active links and their speed, e.g. {"0": "18 links × 26.562 GB/s"}.
 * Links reported inactive are counted apart, since a dead link halves all-reduce bandwidth without any error.
 * Empty output (a GPU without NVLink) gives {}.
 */
export function parseNvlinkStatus(text: string): Record<string, string> {
  const status: Record<string, string> = {};
  let gpu: string | undefined;
  let speeds: string[] = [];
  let inactive = 0;
  const flush = (): void => {
    if (gpu === undefined || (speeds.length === 0 && inactive === 0)) return;
    const distinct = [...new Set(speeds)];
    const active = speeds.length > 0 ? `${speeds.length} links × ${distinct.join('/')}` : 'no active links';
    status[gpu] = inactive > 0 ? `${active}, ${inactive} inactive` : active;
  };
  for (const line of text.split('\n')) {
    const header = /^GPU (\d+):/.exec(line);
    if (header) {
      flush();
      gpu = header[1]!;
      speeds = [];
      inactive = 0;
      continue;
    }
    const link = /^\s*Link \d+:\s*(.+)$/.exec(line);
    if (!link || gpu === undefined) continue;
    const value = link[1]!.trim();
    if (/inactive/i.test(value)) inactive += 1;
    else speeds.push(value);
  }
  flush();
  return status;
}

/** "CUDA Version : 13.0" of `nvidia-smi -q` or the banner of plain `nvidia-smi`: the newest CUDA the driver supports. */
export function parseDriverCudaVersion(text: string): string | undefined {
  return /CUDA Version\s*:\s*([\d.]+)/.exec(text)?.[1];
}

/** "release 13.0, V13.0.88" of `nvcc --version` → "13.0.88". */
export function parseNvccVersion(text: string): string | undefined {
  return /release [\d.]+, V([\d.]+)/.exec(text)?.[1];
}
