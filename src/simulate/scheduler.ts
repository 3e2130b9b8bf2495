/** Batch slots: at most `capacity` requests run; the rest wait first-in first-out. */
export class BatchScheduler {
  private runningCount = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly capacity: number) {}

  get running(): number {
    return this.runningCount;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /** Resolves true once a slot is held (call release() exactly once), or false if `signal` aborts first. */
  acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.runningCount < this.capacity) {
      this.runningCount += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      };
      const onAbort = (): void => {
        const index = this.waiting.indexOf(grant);
        if (index >= 0) this.waiting.splice(index, 1);
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(grant);
    });
  }

  /** Hands the slot straight to the next waiter, so a queued request never loses its turn to a newcomer. */
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.runningCount -= 1;
  }
}
