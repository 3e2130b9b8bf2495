import type { Command } from 'commander';

// PLACEHOLDER: replaced by the owner of this command.
export function registerSimulate(_program: Command): void {}
