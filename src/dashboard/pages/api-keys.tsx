import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import { CopyField } from '../components/copy-field.js';
import { Adder } from '../components/adder.js';
import { Dialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page, refocusIfLost, type PageProps } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
import { formatDate, formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';
import { ConnectedApps } from './connected-apps.js';

type ApiKey = Schema<'ApiKey'>;
type CreatedKey = Schema<'CreatedApiKey'>;

const STATUS_LABELS: Record<ApiKey['status'], string> = { active: 'Active', expired: 'Expired', revoked: 'Revoked' };

/** The Developer API: where to call, how to configure an MCP client, the workspace's keys and its connected apps. */
export function ApiKeysPage({ session }: PageProps) {
  const keys = useLoad(() => call(api.GET('/api-keys', { params: { query: { limit: 100 } } })));
  const [created, setCreated] = useState<CreatedKey>();
  const [revoking, setRevoking] = useState<ApiKey>();
  const revoke = useAction();

  const confirmRevoke = async () => {
    if (!revoking) return;
    const result = await revoke.run(() => call(api.DELETE('/api-keys/{id}', { params: { path: { id: revoking.id } } })));
    if (!result.ok) return;
    setRevoking(undefined);
    await keys.reload();
    refocusIfLost('keys');
  };
  const columns: Column<ApiKey>[] = [
    { header: 'Name', cell: (key) => key.name },
    { header: 'Prefix', cell: (key) => <code>{key.prefix}…</code> },
    { header: 'Created by', cell: (key) => key.createdBy?.name ?? 'A former member' },
    { header: 'Created', cell: (key) => formatDateTime(key.createdAt) },
    { header: 'Last used', cell: (key) => formatDateTime(key.lastUsedAt, 'Never') },
    { header: 'Expires', cell: (key) => formatDate(key.expiresAt, 'Never') },
    { header: 'Status', cell: (key) => <span class={`badge ${key.status}`}>{STATUS_LABELS[key.status]}</span> },
    { header: 'Posts', cell: (key) => (key.postsNeedApproval ? 'Need approval' : 'Publish directly') },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (key) =>
        key.status === 'active' && (
          <button type="button" class="danger" onClick={() => setRevoking(key)}>
            Revoke<span class="visually-hidden"> {key.name}</span>
          </button>
        ),
    },
  ];

  return (
    <Page title="Developer API" intro="Programs and AI agents use this workspace with an API key, over REST or MCP. A key acts as the member who created it.">
      <section aria-labelledby="keys">
        <h2 id="keys">Keys</h2>
        <Adder label="Create a key">
          {(close) =>
            created ? (
              <NewKey
                created={created}
                onDone={() => {
                  setCreated(undefined);
                  close();
                }}
              />
            ) : (
              <CreateKeyForm
                onCreated={async (key) => {
                  setCreated(key);
                  await keys.reload();
                }}
              />
            )
          }
        </Adder>
        <ErrorMessage message={keys.error?.message} />
        {!keys.data && !keys.error && <Loading what="the keys" />}
        {keys.data && <Table caption="API keys of the workspace, newest first" columns={columns} rows={keys.data.items} rowKey={(key) => key.id} empty="No keys yet." />}
        {keys.data?.nextCursor && <p class="hint">Showing the newest 100 keys.</p>}
      </section>
      <ConnectedApps session={session} />
      <Connecting apiKey={created?.key} />
      <Dialog
        open={!!revoking}
        title={`Revoke the key “${revoking?.name ?? ''}”?`}
        onClose={() => {
          revoke.clearError();
          setRevoking(undefined);
        }}
        busy={revoke.busy}
        returnFocus="keys"
        confirm={{ label: 'Revoke key', busyLabel: 'Revoking…', error: revoke.error?.message, onConfirm: confirmRevoke }}
      >
        <p>
          Every call with the key <code>{revoking?.prefix}…</code> is refused from the next request on, over REST and MCP. This cannot be undone: a
          program that uses it needs a new key.
        </p>
      </Dialog>
    </Page>
  );
}

/** The base URL, the OpenAPI document and an MCP client configuration for this very server. */
function Connecting({ apiKey }: { apiKey: string | undefined }) {
  const origin = location.origin;
  const mcpConfiguration = JSON.stringify(
    { mcpServers: { postwise: { type: 'http', url: `${origin}/mcp`, headers: { 'x-api-key': apiKey ?? 'YOUR_API_KEY' } } } },
    null,
    2,
  );
  return (
    <section aria-labelledby="connecting">
      <h2 id="connecting">Connecting</h2>
      <CopyField label="REST base URL" value={`${origin}/api/v1`} hint="Send the key in the x-api-key header." />
      <p>
        Every operation is described in the <a href="/api/v1/openapi.json">OpenAPI document</a> (JSON, OpenAPI 3.1).
      </p>
      <CopyField
        label="MCP client configuration"
        value={mcpConfiguration}
        multiline
        hint={
          apiKey
            ? 'For an MCP client over Streamable HTTP, with the key you just created.'
            : 'For an MCP client over Streamable HTTP (some name the type streamable-http). Replace YOUR_API_KEY with a key.'
        }
      />
    </section>
  );
}

function CreateKeyForm({ onCreated }: { onCreated: (key: CreatedKey) => Promise<void> }) {
  const form = useRef<HTMLFormElement>(null);
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState('');
  const [needApproval, setNeedApproval] = useState(false);
  const create = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (create.busy) return;
    // The key works through the chosen day, to its last moment in the browser's time zone.
    const expiresAt = expiry ? new Date(`${expiry}T23:59:59.999`).toISOString() : undefined;
    const result = await create.run(() => call(api.POST('/api-keys', { body: { name: name.trim(), postsNeedApproval: needApproval, ...(expiresAt && { expiresAt }) } })));
    if (!result.ok) return focusFirstInvalid(form.current);
    setName('');
    setExpiry('');
    setNeedApproval(false);
    await onCreated(result.data);
  };

  return (
    <form ref={form} onSubmit={submit} aria-busy={create.busy ? 'true' : undefined}>
      <Field label="Name" name="name" value={name} onInput={setName} required hint="What uses it, to tell keys apart: “CI publisher”, “Claude”." error={errorFor(create.error, 'name')} />
      <Field
        label="Expires after"
        type="date"
        name="expiresAt"
        value={expiry}
        onInput={setExpiry}
        min={today()}
        hint="The key stops working at the end of this day. Leave empty for a key that does not expire."
        error={errorFor(create.error, 'expiresAt')}
      />
      <div class="field">
        <label class="checkbox">
          <input type="checkbox" name="postsNeedApproval" checked={needApproval} aria-describedby="approval-hint" onChange={(event) => setNeedApproval(event.currentTarget.checked)} />
          Posts need approval
        </label>
        <p class="hint" id="approval-hint">
          The live posts written with this key wait on the Approvals page until an approver approves them: the safe way to give a key to an AI agent.
        </p>
      </div>
      <ErrorMessage message={formError(create.error, ['name', 'expiresAt'])} />
      <SubmitButton busy={create.busy} busyLabel="Creating…">
        Create key
      </SubmitButton>
    </form>
  );
}

/** The new key's value, this once. */
function NewKey({ created, onDone }: { created: CreatedKey; onDone: () => void }) {
  return (
    <div class="callout">
      <p class="warning">
        <strong>Copy this key now: it will not be shown again.</strong> Only a hash of it is stored; if it is lost, revoke it and create another.
      </p>
      <CopyField label={`API key “${created.name}”`} value={created.key} autoFocus />
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

function today(): string {
  const date = new Date();
  return `${date.getFullYear()}-${String(date.getMonth() + 1).padStart(2, '0')}-${String(date.getDate()).padStart(2, '0')}`;
}
