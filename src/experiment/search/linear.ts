/** Dense Cholesky factoring and triangular solves: the few hundred unknowns a search fits need nothing more. */

/** Lower Cholesky factor of a symmetric positive-definite matrix (row-major rows), or undefined when it is not. */
export function cholesky(matrix: number[][]): number[][] | undefined {
  const n = matrix.length;
  const lower = Array.from({ length: n }, () => new Array<number>(n).fill(0));
  for (let i = 0; i < n; i += 1) {
    for (let j = 0; j <= i; j += 1) {
      let sum = matrix[i]![j]!;
      for (let k = 0; k < j; k += 1) sum -= lower[i]![k]! * lower[j]![k]!;
      if (i === j) {
        if (sum <= 0) return undefined;
        lower[i]![i] = Math.sqrt(sum);
      } else lower[i]![j] = sum / lower[j]![j]!;
    }
  }
  return lower;
}

export function solveLower(lower: number[][], b: readonly number[]): number[] {
  const x = new Array<number>(b.length);
  for (let i = 0; i < b.length; i += 1) {
    let sum = b[i]!;
    for (let k = 0; k < i; k += 1) sum -= lower[i]![k]! * x[k]!;
    x[i] = sum / lower[i]![i]!;
  }
  return x;
}

export function solveUpper(lower: number[][], b: readonly number[]): number[] {
  const n = b.length;
  const x = new Array<number>(n);
  for (let i = n - 1; i >= 0; i -= 1) {
    let sum = b[i]!;
    for (let k = i + 1; k < n; k += 1) sum -= lower[k]![i]! * x[k]!;
    x[i] = sum / lower[i]![i]!;
  }
  return x;
}
