#!/usr/bin/env node
// The command-line client (src/cli/main.ts), run from its TypeScript sources as the service is, through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/main.ts');
