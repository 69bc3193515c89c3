import { useState } from 'preact/hooks';
import { api, call, type Schema } from '../api.js';
import type { Session } from '../auth.js';
import { Dialog } from '../components/dialog.js';
import { ErrorMessage } from '../components/form.js';
import { Loading, refocusIfLost } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
import { formatDate, formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';
import { SCOPES } from '../../oauth/scopes.js';

type ConnectedApp = Schema<'ConnectedApp'>;

const REACHES: Record<ConnectedApp['resource'], string> = { mcp: 'MCP', api: 'REST API' };

/**
 * The apps members connected by OAuth (hosted agents), on the Developer API page below the keys: what each reaches and
 * may do, whether its posts wait for approval (a checkbox, for the member who connected it and the owner), and
 * Disconnect, confirmed. Every member sees every app, as every member sees every key.
 */
export function ConnectedApps({ session }: { session: Session }) {
  const apps = useLoad(() => call(api.GET('/connected-apps', { params: { query: { limit: 100 } } })));
  const [disconnecting, setDisconnecting] = useState<ConnectedApp>();
  const change = useAction();
  const disconnect = useAction();
  // The API answers FORBIDDEN to anybody else, so only they are offered the controls.
  const mayManage = (app: ConnectedApp) => session.role === 'owner' || app.createdBy.id === session.user.id;
  const mcpUrl = `${location.origin}/mcp`;

  const setApproval = async (app: ConnectedApp, postsNeedApproval: boolean) => {
    const result = await change.run(() => call(api.PATCH('/connected-apps/{id}', { params: { path: { id: app.id } }, body: { postsNeedApproval } })));
    if (result.ok) apps.setData((data) => data && { ...data, items: data.items.map((item) => (item.id === app.id ? result.data : item)) });
    // Refused: the checkbox shows the rule as it is again.
    else await apps.reload();
  };
  const confirmDisconnect = async () => {
    if (!disconnecting) return;
    const result = await disconnect.run(() => call(api.DELETE('/connected-apps/{id}', { params: { path: { id: disconnecting.id } } })));
    if (!result.ok) return;
    setDisconnecting(undefined);
    await apps.reload();
    refocusIfLost('connected-apps');
  };

  const columns: Column<ConnectedApp>[] = [
    {
      header: 'App',
      cell: (app) => (
        <>
          {app.logoUri?.startsWith('https:') && <img class="app-logo" src={app.logoUri} alt="" width={20} height={20} loading="lazy" referrerpolicy="no-referrer" />}
          {app.appName} <span class="hint">at {app.redirectHost}</span>
          {new Date(app.expiresAt).getTime() <= Date.now() && <span class="hint"> Expired {formatDate(app.expiresAt)}: it must be connected again.</span>}
        </>
      ),
    },
    { header: 'Reaches', cell: (app) => REACHES[app.resource] },
    {
      header: 'May',
      cell: (app) => (
        <ul class="app-scopes">
          {app.scopes.map((scope) => (
            <li key={scope}>{SCOPES[scope]}</li>
          ))}
        </ul>
      ),
    },
    {
      header: 'Approval',
      cell: (app) =>
        mayManage(app) ? (
          <label class="checkbox">
            <input
              type="checkbox"
              checked={app.postsNeedApproval}
              // One change at a time: a click while the last is sent changes nothing.
              onClick={(event) => change.busy && event.preventDefault()}
              onChange={(event) => void setApproval(app, event.currentTarget.checked)}
            />
            Posts wait for approval<span class="visually-hidden"> ({app.appName})</span>
          </label>
        ) : app.postsNeedApproval ? (
          'Posts wait for approval'
        ) : (
          'Posts publish directly'
        ),
    },
    { header: 'Connected', cell: (app) => `${formatDateTime(app.createdAt)} by ${app.createdBy.name}` },
    { header: 'Last used', cell: (app) => formatDateTime(app.lastUsedAt, 'Never') },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (app) =>
        mayManage(app) && (
          <button type="button" class="danger" onClick={() => setDisconnecting(app)}>
            Disconnect<span class="visually-hidden"> {app.appName}</span>
          </button>
        ),
    },
  ];

  return (
    <section aria-labelledby="connected-apps">
      <h2 id="connected-apps">Connected apps</h2>
      <p>
        Hosted AI agents connect with OAuth instead of a key: a member allows an app, in the browser, what it may do in this workspace. An app acts as the member who
        connected it; its posts wait for approval unless that is turned off.
      </p>
      <ErrorMessage message={apps.error?.message ?? change.error?.message} />
      {!apps.data && !apps.error && <Loading what="the connected apps" />}
      {apps.data &&
        (apps.data.items.length === 0 ? (
          <p>
            Apps appear here when someone connects a hosted agent (for example a chat app's custom connector) to <code>{mcpUrl}</code> and allows it.
          </p>
        ) : (
          <Table caption="Apps connected to the workspace, newest first" class="connected-apps" columns={columns} rows={apps.data.items} rowKey={(app) => app.id} />
        ))}
      {apps.data?.nextCursor && <p class="hint">Showing the newest 100 apps.</p>}
      <Dialog
        open={!!disconnecting}
        title={`Disconnect “${disconnecting?.appName ?? ''}”?`}
        onClose={() => {
          disconnect.clearError();
          setDisconnecting(undefined);
        }}
        busy={disconnect.busy}
        returnFocus="connected-apps"
        confirm={{ label: 'Disconnect app', busyLabel: 'Disconnecting…', error: disconnect.error?.message, onConfirm: confirmDisconnect }}
      >
        <p>
          The app at {disconnecting?.redirectHost}, connected by {disconnecting?.createdBy.name}, is refused from its next request on, and every token it holds stops
          working. This cannot be undone: to use it again, someone has to connect it again from the app.
        </p>
      </Dialog>
    </section>
  );
}
