import type { Command } from 'commander';

// PLACEHOLDER: `ls`, `show`, `diff` are replaced by the owner of the store.
export function registerStoreViews(_program: Command): void {}
