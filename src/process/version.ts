import { readFileSync } from 'node:fs';

/** The service's version, package.json's: the OpenAPI document's `info.version` and MCP's `serverInfo.version`. */
export const VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
