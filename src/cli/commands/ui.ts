import type { Command } from 'commander';

// PLACEHOLDER: replaced by the owner of this command.
export function registerUi(_program: Command): void {}
