/** The value at `path` (object keys, array indices) inside a parsed JSON/YAML value; undefined where the path ends. */
export function valueAt(root: unknown, path: readonly (string | number)[]): unknown {
  let value = root;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string | number, unknown>)[key];
  }
  return value;
}
