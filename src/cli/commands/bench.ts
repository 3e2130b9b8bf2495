import type { Command } from 'commander';

// PLACEHOLDER: replaced by the owner of this command.
export function registerBench(_program: Command): void {}
