/**
 * The admin commands that are not operations, written by hand: the operator's, outside any workspace (plans and
 * subscriptions are never a member's to set: src/admin/plans.ts), making a workspace, setting a password (a secret
 * read from standard input, which no operation takes), and pruning clusters (which needs no database).
 */
import { Option } from 'commander';
import { optionKey, readStdin } from '../cli/flags.js';
import { hashPassword, passwordProblem } from '../auth/passwords.js';
import { clustersDir, ClustersDirUnreadable, pruneClusters } from '../db/relocated-clusters.js';
import { PLATFORMS, type Platform } from '../platforms/index.js';
import { bootstrapWorkspace } from './first-workspace.js';
import { CommandError, required, type AdminCommand, type Options } from './command.js';
import { definePlan, setSubscription, setWorkspacePlan } from './plans.js';

const workspace = () => new Option('--workspace <id>', 'The workspace (required)');
const plan = (words: string) => new Option('--plan <name>', words);
const repeat = (value: string, previous: string[] | undefined) => [...(previous ?? []), value];

export const operatorCommands: AdminCommand[] = [
  {
    name: 'bootstrap',
    summary: 'Create a workspace, its owner and an API key; prints { workspaceId, userId, apiKey }',
    options: [
      plan('The workspace\'s plan (the default plan unless given)'),
      new Option('--no-subscription', 'Without an active subscription'),
      new Option('--workspace-name <name>', 'The workspace\'s name'),
      new Option('--email <email>', 'The owner\'s email (a made-up one unless given)'),
    ],
    run: (o, { db }) =>
      bootstrapWorkspace(db, {
        plan: o.plan as string | undefined,
        subscription: o.subscription !== false,
        workspaceName: o.workspaceName as string | undefined,
        ownerEmail: o.email as string | undefined,
      }),
  },
  {
    name: 'set-password',
    summary: 'Set the dashboard password of a member, read from standard input; ends the member\'s sessions',
    details:
      'The password is typed without echo on a terminal, or the first line of a pipe; 12 to 200 characters. ' +
      'Prints { userId, email, passwordSet }.',
    options: [workspace(), new Option('--email <email>', 'The member\'s email (required)')],
    async run(o, { db }) {
      const email = required(o, 'email').toLowerCase();
      const [member] = await db<{ userId: string }[]>`
        SELECT m.user_id FROM memberships m JOIN users u ON u.id = m.user_id
        WHERE m.organization_id::text = ${required(o, 'workspace')} AND u.email = ${email}`;
      if (!member) throw new CommandError({ code: 'NOT_FOUND', message: `${email} is not a member of that workspace` });
      const password = await readPassword();
      const problem = passwordProblem(password);
      if (problem) throw new CommandError({ code: 'VALIDATION_ERROR', message: `The password ${problem}` });
      const hash = await hashPassword(password);
      await db.begin(async (tx) => {
        await tx`UPDATE users SET password_hash = ${hash}, updated_at = now() WHERE id = ${member.userId}`;
        await tx`DELETE FROM sessions WHERE user_id = ${member.userId}`;
      });
      return { userId: member.userId, email, passwordSet: true };
    },
  },
  {
    name: 'define-plan',
    summary: 'Create a plan (--rate-limit and --storage-bytes required) or change the numbers given',
    details: 'Prints { name, rateLimitPerMinute, storageBytes, monthlyPostQuotas }.',
    options: [
      plan('The plan (required)'),
      new Option('--rate-limit <n>', 'Calls a minute'),
      new Option('--storage-bytes <n>', 'The storage allowance, in bytes'),
      new Option('--quota <platform=n>', `Posts a month to a platform (${PLATFORMS.join(', ')}), e.g. LINKEDIN=50; repeatable`).argParser(repeat),
    ],
    run: (o, { db }) =>
      definePlan(db, {
        name: required(o, 'plan'),
        rateLimitPerMinute: count(o, 'rate-limit'),
        storageBytes: count(o, 'storage-bytes'),
        monthlyPostQuotas: quotas(o.quota),
      }),
  },
  {
    name: 'set-plan',
    summary: 'Put a workspace on a plan; prints { workspaceId, plan, subscriptionStatus }',
    options: [workspace(), plan('The plan (required)')],
    run: (o, { db }) => setWorkspacePlan(db, required(o, 'workspace'), required(o, 'plan')),
  },
  {
    name: 'set-subscription',
    summary: 'Set a workspace\'s subscription, active or none; prints { workspaceId, plan, subscriptionStatus }',
    options: [workspace(), new Option('--status <status>', 'active or none (required)')],
    run: (o, { db }) => {
      const status = required(o, 'status');
      if (status !== 'active' && status !== 'none') throw new CommandError({ code: 'VALIDATION_ERROR', message: '--status is active or none' });
      return setSubscription(db, required(o, 'workspace'), status);
    },
  },
  {
    name: 'prune-clusters',
    summary: 'Run as root: the embedded clusters in CLUSTERS_DIR whose DATA_DIR is provably gone, and the ones kept and why',
    details: 'Lists them with their sizes (CLUSTERS_DIR is /var/lib/postwise unless set); --yes removes the orphaned ones. Needs no database.',
    options: [new Option('--yes', 'Remove the orphaned clusters')],
    offline: true,
    async run(o) {
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
  },
];

/** A whole number of 0 or more, or undefined when the option is absent. */
function count(options: Options, flag: string): number | undefined {
  const value = options[optionKey(flag)];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d{1,15}$/.test(value)) throw new CommandError({ code: 'VALIDATION_ERROR', message: `--${flag} is a whole number` });
  return Number(value);
}

/** `--quota LINKEDIN=20 --quota BLUESKY=100` */
function quotas(values: unknown): Partial<Record<Platform, number>> {
  const entries = (Array.isArray(values) ? (values as string[]) : []).map((value) => {
    const [platform, posts] = value.split('=');
    if (!PLATFORMS.includes(platform as Platform) || !/^\d{1,9}$/.test(posts ?? '')) {
      throw new CommandError({ code: 'VALIDATION_ERROR', message: `--quota is PLATFORM=N with PLATFORM one of ${PLATFORMS.join(', ')}` });
    }
    return [platform, Number(posts)];
  });
  return Object.fromEntries(entries);
}

/** A password from standard input: typed without echo on a terminal, else the first line of what is piped. */
async function readPassword(): Promise<string> {
  const input = process.stdin;
  if (!input.isTTY) return (await readStdin()).split(/\r?\n/)[0] ?? '';
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
