import type { Command } from 'commander';

// PLACEHOLDER: replaced by the owner of this command.
export function registerRun(_program: Command): void {}
