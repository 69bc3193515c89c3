/**
 * What the admin command's names and flags say that the registry does not (docs/operations.md, "The admin command").
 * Every operation is a command named by its id (`listApiKeys` → `list-api-keys`), its fields flags (`--limit`); an
 * entry here gives an operation's command more flags, or makes a second command of it under another name.
 */

/** A flag for one field of the operation: its name (`--post` for `id`), or what else it does. */
export type FlagAlias =
  | string
  | {
      field: string;
      /** The flag takes no value and sets the field to this (`--on`: true). */
      value?: unknown;
      /** The word that stands for null (`--max-runs none`). */
      nullWord?: string;
      /** Repeated for a list, one item each (`--linkedin-variation TEXT`...), rather than comma-separated. */
      repeat?: true;
    };

export interface AdminAlias {
  /** The operation's own command (its id in kebab-case), or a second one under this name. */
  command: string;
  operation: string;
  /** Its line in --help, in place of the operation's summary. */
  summary?: string;
  /**
   * By flag name. A flag naming a field stands in place of the field's own flag (`--post` for `--id`); one that sets a
   * value comes beside it (`--disable` beside `--enabled`).
   */
  flags?: Record<string, FlagAlias>;
  /** Flags this command needs, though the operation does not. */
  required?: string[];
}

const recycleRuleFlags: Record<string, FlagAlias> = {
  channels: 'integrationIds',
  tags: 'tagIds',
  windows: { field: 'postingWindows', nullWord: 'workspace' },
  'max-runs': { field: 'maxRuns', nullWord: 'none' },
  'linkedin-variation': { field: 'linkedinVariations', repeat: true },
  disable: { field: 'enabled', value: false },
};

export const aliases: AdminAlias[] = [
  { command: 'create-key', operation: 'createApiKey' },
  { command: 'list-keys', operation: 'listApiKeys' },
  { command: 'update-key', operation: 'updateApiKey', flags: { key: 'id', 'no-approval': { field: 'postsNeedApproval', value: false } } },
  { command: 'revoke-key', operation: 'revokeApiKey', flags: { key: 'id' } },
  { command: 'list-apps', operation: 'listConnectedApps' },
  { command: 'update-app', operation: 'updateConnectedApp', flags: { app: 'id', 'no-approval': { field: 'postsNeedApproval', value: false } } },
  { command: 'disconnect-app', operation: 'revokeConnectedApp', flags: { app: 'id' } },
  { command: 'remove-member', operation: 'removeMember', flags: { user: 'userId' } },
  { command: 'select-account', operation: 'selectIntegrationAccount', flags: { integration: 'id' } },
  { command: 'refresh-integration', operation: 'refreshIntegration', flags: { integration: 'id' } },
  { command: 'disconnect-integration', operation: 'disconnectIntegration', flags: { integration: 'id' } },
  {
    command: 'set-posting-windows',
    operation: 'updateWorkspaceSettings',
    summary: 'Set the workspace\'s time zone and the posting windows NEXT_WINDOW takes its slots from',
    flags: { windows: 'postingWindows' },
  },
  {
    command: 'set-languages',
    operation: 'updateWorkspaceSettings',
    summary: 'Set the workspace\'s default languages (--languages \'\' for none)',
    required: ['languages'],
  },
  {
    command: 'set-approval',
    operation: 'updateWorkspaceSettings',
    summary: 'Set whether every live post of the workspace waits for approval (--on, --off), and who approves',
    flags: { on: { field: 'postsNeedApproval', value: true }, off: { field: 'postsNeedApproval', value: false }, approvers: 'approverIds' },
  },
  { command: 'approve-post', operation: 'approvePost', flags: { post: 'id' } },
  { command: 'reject-post', operation: 'rejectPost', flags: { post: 'id' } },
  {
    command: 'update-webhook',
    operation: 'updateWebhook',
    flags: { webhook: 'id', enable: { field: 'enabled', value: true }, disable: { field: 'enabled', value: false } },
  },
  { command: 'delete-webhook', operation: 'deleteWebhook', flags: { webhook: 'id' } },
  { command: 'rotate-webhook-secret', operation: 'rotateWebhookSecret', flags: { webhook: 'id' } },
  { command: 'list-webhook-deliveries', operation: 'listWebhookDeliveries', flags: { webhook: 'id' } },
  { command: 'redeliver-webhook', operation: 'redeliverWebhook', flags: { webhook: 'id', delivery: 'deliveryId' } },
  { command: 'create-recycle-rule', operation: 'createRecycleRule', flags: recycleRuleFlags },
  {
    command: 'update-recycle-rule',
    operation: 'updateRecycleRule',
    flags: { ...recycleRuleFlags, rule: 'id', enable: { field: 'enabled', value: true } },
  },
  { command: 'delete-recycle-rule', operation: 'deleteRecycleRule', flags: { rule: 'id' } },
  { command: 'list-recycle-events', operation: 'listRecycleEvents', flags: { rule: 'ruleId', post: 'postId' } },
];
