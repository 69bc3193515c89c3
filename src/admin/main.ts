/**
 * `npm run admin -- <command>`: workspace administration from a shell, against the same database as the
 * server (DATABASE_URL, or the embedded Postgres under DATA_DIR, whether or not a server is running). Each
 * command but `bootstrap` runs a registry operation through the same pipeline as REST and MCP, acting as a
 * member of the workspace (its owner unless --user is given), so internal operations are reachable here.
 */
import { parseArgs } from 'node:util';
import { bootstrapWorkspace } from './first-workspace.js';
import { loadConfig } from '../process/config.js';
import { openCore, type Core } from '../service/core.js';
import { clustersDir, ClustersDirUnreadable, pruneClusters } from '../db/relocated-clusters.js';
import { createLogger } from '../process/logger.js';
import { PLATFORMS, type Platform } from '../platforms/index.js';
import { definePlan, setSubscription, setWorkspacePlan } from './plans.js';
import { hashPassword, passwordProblem } from '../auth/passwords.js';
import { OperationError } from '../registry/errors.js';
import { exitOnStartupFailure, orExit } from '../process/startup.js';

const usage = `Usage: npm run admin -- <command> [options]

  bootstrap [--plan NAME] [--no-subscription] [--workspace-name NAME] [--email EMAIL]
      Create a workspace, its owner and an API key; prints { workspaceId, userId, apiKey }.
  create-key --workspace ID [--user ID] [--name NAME] [--expires-at ISO8601] [--posts-need-approval]
      Create an API key for a member (the owner unless --user); the key is printed once. With --posts-need-approval,
      the live posts written with it wait for approval (the safe way to hand a key to an AI agent).
  update-key --workspace ID --key KEY_ID [--name NAME] [--posts-need-approval | --no-approval]
  list-keys --workspace ID [--limit N] [--cursor NEXT_CURSOR]
      A page of keys, newest first (revoked and expired ones too); pass nextCursor as --cursor for the next.
  revoke-key --workspace ID --key KEY_ID
  create-tag --workspace ID --name NAME
  add-member --workspace ID --email EMAIL [--name NAME]
  remove-member --workspace ID --user USER_ID      (also revokes that member's keys and ends their sessions)
  set-password --workspace ID --email EMAIL
      Set the dashboard password of a member, read from standard input (typed without echo on a terminal, or the
      first line of a pipe); ends the member's sessions. At least 12 characters.
  create-integration --workspace ID --platform BLUESKY|LINKEDIN --name NAME
      A channel without credentials (tokenStatus MISSING), for tests and trials.
  connect-bluesky --workspace ID --handle HANDLE --app-password PASSWORD [--service-url URL]
      Check the app password against the account's PDS (BLUESKY_SERVICE_URL unless --service-url, itself
      https://bsky.social by default) and connect it, or reconnect it; prints the integration.
  select-account --workspace ID --integration ID --account URN
      Pick the account a PENDING_SELECTION channel (a LinkedIn connect by a page administrator) posts as: the
      member's urn:li:person:… or a page's urn:li:organization:…, as the connect page offered; prints the integration.
  refresh-integration --workspace ID --integration ID
      Refresh the channel's token now (or check it where it cannot be refreshed); prints the integration.
  disconnect-integration --workspace ID --integration ID
      Forget the channel's credentials (the channel and its schedules stay), then revoke its LinkedIn tokens at
      LinkedIn, best effort (a failure is logged); prints the integration.
  set-posting-windows --workspace ID [--time-zone IANA_ZONE] [--windows '[{"weekdays":[1,2,3,4,5],"times":["09:00"]}]']
      The workspace's time zone and the posting windows NEXT_WINDOW takes slots from.
  set-approval --workspace ID (--on | --off) [--approvers USER_ID,USER_ID]
      Whether every live post of the workspace waits for approval, and who approves (the owners unless named;
      --approvers '' for the owners again).
  list-approvals --workspace ID [--status pending_review|rejected] [--limit N] [--cursor NEXT_CURSOR]
      The posts waiting for approval, oldest request first.
  approve-post --workspace ID --post ID [--note TEXT]
      Approve a waiting post: its quota is spent and it is queued for publishing.
  reject-post --workspace ID --post ID [--note TEXT]
  set-languages --workspace ID --languages de,en
      The workspace's default languages (BCP-47 tags, at most 3): what a Bluesky post whose schedule's settings name no
      langs carries; --languages '' for none (the language detected from the text, when confident).

  create-webhook --workspace ID --url URL [--event-types post.created,schedule.published] [--description TEXT]
      An endpoint the workspace's events are POSTed to, signed (Standard Webhooks); its secret is printed this once.
  list-webhooks --workspace ID
  update-webhook --workspace ID --webhook ID [--url URL] [--event-types …] [--description TEXT] [--enable | --disable]
  delete-webhook --workspace ID --webhook ID
  rotate-webhook-secret --workspace ID --webhook ID
      A new secret, printed once; the old one keeps signing for 24 hours.
  list-webhook-deliveries --workspace ID --webhook ID [--limit N] [--cursor NEXT_CURSOR]
      The endpoint's delivery log, newest first: each delivery's payload and attempts.
  redeliver-webhook --workspace ID --webhook ID --delivery ID

  create-recycle-rule --workspace ID --name NAME --channels ID,ID [--tags ID,ID] [--frequency DAILY|WEEKLY]
      [--posts-per-run N] [--min-interval-days N] [--max-runs N] [--windows JSON] [--linkedin-variation TEXT]... [--disable]
      A rule that schedules evergreen posts again once published (docs/publishing.md#evergreen-recycling); its first run
      is at once.
  list-recycle-rules --workspace ID
  update-recycle-rule --workspace ID --rule ID [the fields above] [--max-runs none] [--windows workspace] [--enable | --disable]
  delete-recycle-rule --workspace ID --rule ID
  list-recycle-events --workspace ID [--rule ID] [--post ID] [--status RECYCLED|SKIPPED] [--limit N] [--cursor NEXT_CURSOR]
      What the rules did, newest first: the schedules each recycle made, or why it made none.

Operator commands (plans and subscriptions are never a workspace member's to set):
  define-plan --plan NAME [--rate-limit N] [--storage-bytes N] [--quota PLATFORM=N]...
      Create a plan (--rate-limit and --storage-bytes required) or change the numbers given.
  set-plan --workspace ID --plan NAME
  set-subscription --workspace ID --status active|none
  prune-clusters [--yes]
      Run as root: list the embedded clusters in CLUSTERS_DIR (/var/lib/postwise) whose DATA_DIR is provably gone,
      with their sizes, and the ones kept and why; --yes removes the orphaned ones. Needs no database.

Every command prints JSON; --json is accepted for scripts that pass it.`;

class CommandError extends Error {
  constructor(readonly body: { code: string; message: string }) {
    super(body.message);
  }
}

type Options = Record<string, string | string[] | boolean | undefined>;

/** Commands that are registry operations: which one, and its arguments from the options. */
const operationCommands: Record<string, { operation: string; actor?: string; args: (options: Options) => Record<string, unknown> }> = {
  'create-key': {
    operation: 'createApiKey',
    actor: 'user',
    args: (o) => ({ name: o.name, expiresAt: o['expires-at'], postsNeedApproval: o['posts-need-approval'] === true }),
  },
  'update-key': {
    operation: 'updateApiKey',
    args: (o) => ({ id: o.key, name: o.name, postsNeedApproval: o['posts-need-approval'] ? true : o['no-approval'] ? false : undefined }),
  },
  'set-approval': {
    operation: 'updateWorkspaceSettings',
    args: (o) => ({ postsNeedApproval: o.on ? true : o.off ? false : undefined, approverIds: optionalList(o, 'approvers') }),
  },
  'list-approvals': { operation: 'listApprovals', args: (o) => ({ status: o.status, limit: o.limit, cursor: o.cursor }) },
  'approve-post': { operation: 'approvePost', args: (o) => ({ id: o.post, note: o.note }) },
  'reject-post': { operation: 'rejectPost', args: (o) => ({ id: o.post, note: o.note }) },
  'list-keys': { operation: 'listApiKeys', args: (o) => ({ limit: o.limit, cursor: o.cursor }) },
  'revoke-key': { operation: 'revokeApiKey', args: (o) => ({ id: o.key }) },
  'create-tag': { operation: 'createTag', args: (o) => ({ name: o.name }) },
  'add-member': { operation: 'addMember', args: (o) => ({ email: o.email, name: o.name }) },
  'remove-member': { operation: 'removeMember', args: (o) => ({ userId: o.user }) },
  'create-integration': { operation: 'createIntegration', args: (o) => ({ platform: o.platform, name: o.name }) },
  'connect-bluesky': {
    operation: 'connectBluesky',
    args: (o) => ({ handle: o.handle, appPassword: o['app-password'], serviceUrl: o['service-url'] }),
  },
  'select-account': { operation: 'selectIntegrationAccount', args: (o) => ({ id: o.integration, account: o.account }) },
  'refresh-integration': { operation: 'refreshIntegration', args: (o) => ({ id: o.integration }) },
  'disconnect-integration': { operation: 'disconnectIntegration', args: (o) => ({ id: o.integration }) },
  'set-posting-windows': { operation: 'updateWorkspaceSettings', args: (o) => ({ timeZone: o['time-zone'], postingWindows: json(o.windows, 'windows') }) },
  'set-languages': { operation: 'updateWorkspaceSettings', args: (o) => ({ languages: commaList(o, 'languages') }) },
  'create-webhook': {
    operation: 'createWebhook',
    args: (o) => ({ url: o.url, eventTypes: optionalList(o, 'event-types'), description: o.description }),
  },
  'list-webhooks': { operation: 'listWebhooks', args: () => ({}) },
  'update-webhook': {
    operation: 'updateWebhook',
    args: (o) => ({
      id: o.webhook,
      url: o.url,
      eventTypes: optionalList(o, 'event-types'),
      description: o.description,
      enabled: o.enable ? true : o.disable ? false : undefined,
    }),
  },
  'delete-webhook': { operation: 'deleteWebhook', args: (o) => ({ id: o.webhook }) },
  'rotate-webhook-secret': { operation: 'rotateWebhookSecret', args: (o) => ({ id: o.webhook }) },
  'list-webhook-deliveries': { operation: 'listWebhookDeliveries', args: (o) => ({ id: o.webhook, limit: o.limit, cursor: o.cursor }) },
  'redeliver-webhook': { operation: 'redeliverWebhook', args: (o) => ({ id: o.webhook, deliveryId: o.delivery }) },
  'create-recycle-rule': { operation: 'createRecycleRule', args: (o) => ({ ...recycleRuleArgs(o), enabled: o.disable ? false : undefined }) },
  'list-recycle-rules': { operation: 'listRecycleRules', args: () => ({}) },
  'update-recycle-rule': {
    operation: 'updateRecycleRule',
    args: (o) => ({ id: o.rule, ...recycleRuleArgs(o), enabled: o.enable ? true : o.disable ? false : undefined }),
  },
  'delete-recycle-rule': { operation: 'deleteRecycleRule', args: (o) => ({ id: o.rule }) },
  'list-recycle-events': {
    operation: 'listRecycleEvents',
    args: (o) => ({ ruleId: o.rule, postId: o.post, status: o.status, limit: o.limit, cursor: o.cursor }),
  },
};

/** A recycle rule's fields from the options: each only when given. */
function recycleRuleArgs(o: Options): Record<string, unknown> {
  return {
    name: o.name,
    integrationIds: optionalList(o, 'channels'),
    tagIds: optionalList(o, 'tags'),
    frequency: o.frequency,
    postsPerRun: count(o, 'posts-per-run'),
    minIntervalDays: count(o, 'min-interval-days'),
    maxRuns: o['max-runs'] === 'none' ? null : count(o, 'max-runs'),
    postingWindows: o.windows === 'workspace' ? null : json(o.windows, 'windows'),
    linkedinVariations: o['linkedin-variation'] === undefined ? undefined : (o['linkedin-variation'] as string[]).filter(Boolean),
  };
}

/** Commands that need no database: run before, and without, opening the core (nor starting or joining a cluster). */
const offlineCommands: Record<string, (options: Options) => Promise<unknown>> = {
  'prune-clusters': async (o) => {
    let report;
    try {
      report = await pruneClusters(clustersDir(), { remove: Boolean(o.yes) });
    } catch (error) {
      if (error instanceof ClustersDirUnreadable) throw new CommandError({ code: 'CLUSTERS_DIR_UNREADABLE', message: error.message });
      throw error;
    }
    const failed = report.orphaned.filter((cluster) => cluster.error);
    if (failed.length) {
      const removed = report.orphaned.length - failed.length;
      const reasons = failed.map((cluster) => `${cluster.path} (${cluster.error})`).join(', ');
      throw new CommandError({ code: 'PRUNE_FAILED', message: `removed ${removed} of ${report.orphaned.length} orphaned clusters; could not remove ${reasons}` });
    }
    return report;
  },
};

/** Commands that are not registry operations: the operator's, outside any workspace (src/admin/plans.ts), and setting a password. */
const operatorCommands: Record<string, (core: Core, options: Options) => Promise<unknown>> = {
  'set-password': async (core, o) => {
    const email = required(o, 'email').toLowerCase();
    const [member] = await core.db<{ userId: string }[]>`
      SELECT m.user_id FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id::text = ${required(o, 'workspace')} AND u.email = ${email}`;
    if (!member) throw new CommandError({ code: 'NOT_FOUND', message: `${email} is not a member of that workspace` });
    const password = await readPassword();
    const problem = passwordProblem(password);
    if (problem) throw new CommandError({ code: 'VALIDATION_ERROR', message: `The password ${problem}` });
    const hash = await hashPassword(password);
    await core.db.begin(async (tx) => {
      await tx`UPDATE users SET password_hash = ${hash}, updated_at = now() WHERE id = ${member.userId}`;
      await tx`DELETE FROM sessions WHERE user_id = ${member.userId}`;
    });
    return { userId: member.userId, email, passwordSet: true };
  },
  'define-plan': (core, o) =>
    definePlan(core.db, {
      name: required(o, 'plan'),
      rateLimitPerMinute: count(o, 'rate-limit'),
      storageBytes: count(o, 'storage-bytes'),
      monthlyPostQuotas: quotas(o.quota),
    }),
  'set-plan': (core, o) => setWorkspacePlan(core.db, required(o, 'workspace'), required(o, 'plan')),
  'set-subscription': (core, o) => {
    const status = required(o, 'status');
    if (status !== 'active' && status !== 'none') throw new CommandError({ code: 'VALIDATION_ERROR', message: '--status is active or none' });
    return setSubscription(core.db, required(o, 'workspace'), status);
  },
};

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    json: { type: 'boolean' },
    plan: { type: 'string' },
    'no-subscription': { type: 'boolean' },
    'workspace-name': { type: 'string' },
    email: { type: 'string' },
    workspace: { type: 'string' },
    user: { type: 'string' },
    name: { type: 'string' },
    'expires-at': { type: 'string' },
    key: { type: 'string' },
    limit: { type: 'string' },
    cursor: { type: 'string' },
    platform: { type: 'string' },
    'rate-limit': { type: 'string' },
    'storage-bytes': { type: 'string' },
    quota: { type: 'string', multiple: true },
    status: { type: 'string' },
    'time-zone': { type: 'string' },
    handle: { type: 'string' },
    'app-password': { type: 'string' },
    'service-url': { type: 'string' },
    windows: { type: 'string' },
    languages: { type: 'string' },
    integration: { type: 'string' },
    account: { type: 'string' },
    url: { type: 'string' },
    'event-types': { type: 'string' },
    description: { type: 'string' },
    webhook: { type: 'string' },
    delivery: { type: 'string' },
    enable: { type: 'boolean' },
    disable: { type: 'boolean' },
    'posts-need-approval': { type: 'boolean' },
    'no-approval': { type: 'boolean' },
    on: { type: 'boolean' },
    off: { type: 'boolean' },
    approvers: { type: 'string' },
    rule: { type: 'string' },
    channels: { type: 'string' },
    tags: { type: 'string' },
    frequency: { type: 'string' },
    'posts-per-run': { type: 'string' },
    'min-interval-days': { type: 'string' },
    'max-runs': { type: 'string' },
    'linkedin-variation': { type: 'string', multiple: true },
    post: { type: 'string' },
    note: { type: 'string' },
    yes: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  },
});
const command = positionals[0];
if (values.help || !command || (command !== 'bootstrap' && !operationCommands[command] && !operatorCommands[command] && !offlineCommands[command])) {
  console.error(usage);
  process.exit(values.help ? 0 : 2);
}

const offline = offlineCommands[command];
if (offline) process.exit(await printOutcome(() => offline(values)));

const config = orExit(loadConfig);
const core = await openCore(config, createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel)).catch(exitOnStartupFailure);
let exitCode: number;
try {
  const operator = operatorCommands[command];
  exitCode = await printOutcome(() =>
    command === 'bootstrap' ? bootstrap(core, values) : operator ? operator(core, values) : runOperation(core, command, values),
  );
} finally {
  await core.close();
}
process.exit(exitCode);

/** Prints the command's result as one JSON line, or its error on stderr; the exit code. */
async function printOutcome(execute: () => Promise<unknown>): Promise<number> {
  try {
    console.log(JSON.stringify(await execute()));
    return 0;
  } catch (error) {
    const body = error instanceof CommandError ? error.body : error instanceof OperationError ? { code: error.code, message: error.message } : undefined;
    console.error(body ? JSON.stringify(body) : String(error));
    return 1;
  }
}

function bootstrap(core: Core, options: Options) {
  return bootstrapWorkspace(core.db, {
    plan: options.plan as string | undefined,
    subscription: !options['no-subscription'],
    workspaceName: options['workspace-name'] as string | undefined,
    ownerEmail: options.email as string | undefined,
  });
}

async function runOperation(core: Core, name: string, options: Options) {
  const spec = operationCommands[name]!;
  const workspaceId = options.workspace;
  if (typeof workspaceId !== 'string') throw new CommandError({ code: 'VALIDATION_ERROR', message: '--workspace is required' });
  const actor = spec.actor && typeof options[spec.actor] === 'string' ? (options[spec.actor] as string) : undefined;
  const [member] = await core.db<{ userId: string }[]>`
    SELECT user_id FROM memberships
    WHERE organization_id::text = ${workspaceId} AND ${actor ? core.db`user_id::text = ${actor}` : core.db`role = 'owner'`}`;
  if (!member) throw new CommandError({ code: 'NOT_FOUND', message: actor ? 'No such member of that workspace' : 'No such workspace' });
  const outcome = await core.runAs({ userId: member.userId, workspaceId }, spec.operation, spec.args(options));
  if (!outcome.ok) throw new CommandError(outcome.body);
  return outcome.body;
}

function required(options: Options, name: string): string {
  const value = options[name];
  if (typeof value !== 'string') throw new CommandError({ code: 'VALIDATION_ERROR', message: `--${name} is required` });
  return value;
}

/** A whole number of 0 or more, or undefined when the option is absent. */
function count(options: Options, name: string): number | undefined {
  const value = options[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) throw new CommandError({ code: 'VALIDATION_ERROR', message: `--${name} is a whole number` });
  return Number(value);
}

/** An option holding JSON, or undefined when absent. */
function json(value: Options[string], name: string): unknown {
  if (typeof value !== 'string') return undefined;
  try {
    return JSON.parse(value);
  } catch {
    throw new CommandError({ code: 'VALIDATION_ERROR', message: `--${name} is not valid JSON` });
  }
}

/** A password from standard input: typed without echo on a terminal, else the first line of what is piped. */
async function readPassword(): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) {
    let text = '';
    for await (const chunk of input) text += String(chunk);
    return text.split(/\r?\n/)[0] ?? '';
  }
  process.stderr.write('Password: ');
  input.setRawMode(true);
  return new Promise((resolve) => {
    let typed = '';
    const onData = (chunk: Buffer) => {
      for (const char of chunk.toString('utf8')) {
        if (char === '\r' || char === '\n' || char === '\u0004') {
          input.setRawMode(false);
          input.off('data', onData);
          input.pause();
          process.stderr.write('\n');
          return resolve(typed);
        }
        if (char === '\u0003') process.exit(130);
        typed = char === '\u007f' ? [...typed].slice(0, -1).join('') : typed + char;
      }
    };
    input.on('data', onData);
  });
}

/** `--languages de,en` → ['de', 'en']; an empty value is the empty list. */
/** A comma-separated list, or undefined when the option is absent (`--event-types ''` is the empty list). */
function optionalList(options: Options, name: string): string[] | undefined {
  return options[name] === undefined ? undefined : String(options[name]).split(',').map((item) => item.trim()).filter(Boolean);
}

function commaList(options: Options, name: string): string[] {
  return required(options, name)
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
}

/** `--quota LINKEDIN=20 --quota BLUESKY=100` */
function quotas(values: Options[string]): Partial<Record<Platform, number>> {
  const entries = (Array.isArray(values) ? values : []).map((value) => {
    const [platform, posts] = value.split('=');
    if (!PLATFORMS.includes(platform as Platform) || !/^\d{1,9}$/.test(posts ?? '')) {
      throw new CommandError({ code: 'VALIDATION_ERROR', message: `--quota is PLATFORM=N with PLATFORM one of ${PLATFORMS.join(', ')}` });
    }
    return [platform, Number(posts)];
  });
  return Object.fromEntries(entries);
}
