import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type ApiError, type Schema } from '../api.js';
import { CopyField } from '../components/copy-field.js';
import { Adder } from '../components/adder.js';
import { Dialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page, refocusIfLost, type PageProps } from '../components/page.js';
import { Table, type Column } from '../components/table.js';
import { formatDateTime } from '../format.js';
import { UrlText } from '../components/url-text.js';
import { useAction, useLoad } from '../hooks.js';
import { EVENT_TYPE_NAMES, type EventType } from '../../../operations/events/types.js';

type Endpoint = Schema<'WebhookEndpoint'>;
type Delivery = Schema<'WebhookDelivery'>;


/** Webhooks: endpoints that receive the workspace's events, signed; their delivery logs; endpoints disabled for failing. */
export function WebhooksPage(_props: PageProps) {
  const endpoints = useLoad(() => call(api.GET('/webhooks')));
  const [secret, setSecret] = useState<{ url: string; secret: string; rotated: boolean }>();
  const [deleting, setDeleting] = useState<Endpoint>();
  const [viewing, setViewing] = useState<Endpoint>();
  const change = useAction();
  const remove = useAction();
  const disabled = endpoints.data?.filter((endpoint) => !endpoint.enabled) ?? [];

  const toggle = async (endpoint: Endpoint) => {
    const result = await change.run(() => call(api.PATCH('/webhooks/{id}', { params: { path: { id: endpoint.id } }, body: { enabled: !endpoint.enabled } })));
    if (result.ok) await endpoints.reload();
  };
  const rotate = async (endpoint: Endpoint) => {
    const result = await change.run(() => call(api.POST('/webhooks/{id}/rotate-secret', { params: { path: { id: endpoint.id } } })));
    if (!result.ok) return;
    setSecret({ url: result.data.url, secret: result.data.secret, rotated: true });
    await endpoints.reload();
  };
  const confirmDelete = async () => {
    if (!deleting) return;
    const result = await remove.run(() => call(api.DELETE('/webhooks/{id}', { params: { path: { id: deleting.id } } })));
    if (!result.ok) return;
    if (viewing?.id === deleting.id) setViewing(undefined);
    setDeleting(undefined);
    await endpoints.reload();
    refocusIfLost('endpoints');
  };
  const columns: Column<Endpoint>[] = [
    {
      header: 'URL',
      cell: (endpoint) => (
        <>
          <UrlText url={endpoint.url} />
          {endpoint.description && <span class="hint"> {endpoint.description}</span>}
        </>
      ),
    },
    {
      header: 'Events',
      cell: (endpoint) =>
        endpoint.eventTypes.length
          ? endpoint.eventTypes.map((type, index) => (
              <span key={type}>
                {index > 0 && ', '}
                <code class="unbroken">{type}</code>
              </span>
            ))
          : 'Every event',
    },
    {
      header: 'Status',
      cell: (endpoint) => (
        <>
          <span class={`badge ${endpoint.enabled ? 'active' : 'revoked'}`}>{endpoint.enabled ? 'Enabled' : 'Disabled'}</span>
          {endpoint.enabled && endpoint.failingSince && <span class="hint"> Failing since {formatDateTime(endpoint.failingSince)}</span>}
        </>
      ),
    },
    { header: 'Created', cell: (endpoint) => formatDateTime(endpoint.createdAt) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (endpoint) => (
        <>
          <button type="button" onClick={() => setViewing(endpoint)}>
            Deliveries<span class="visually-hidden"> to {endpoint.url}</span>
          </button>{' '}
          <button type="button" onClick={() => void toggle(endpoint)} disabled={change.busy}>
            {endpoint.enabled ? 'Disable' : 'Enable'}
            <span class="visually-hidden"> {endpoint.url}</span>
          </button>{' '}
          <button type="button" onClick={() => void rotate(endpoint)} disabled={change.busy}>
            Rotate secret<span class="visually-hidden"> of {endpoint.url}</span>
          </button>{' '}
          <button type="button" class="danger" onClick={() => setDeleting(endpoint)}>
            Delete<span class="visually-hidden"> {endpoint.url}</span>
          </button>
        </>
      ),
    },
  ];

  return (
    <Page
      title="Webhooks"
      intro="Endpoints of yours that receive this workspace's events as signed POST requests (Standard Webhooks), so that nothing needs to poll."
    >
      {disabled.length > 0 && (
        <div class="callout" role="status">
          <p class="warning">
            <strong>
              {disabled.length === 1 ? 'An endpoint is disabled' : `${disabled.length} endpoints are disabled`}: nothing is sent to{' '}
              {disabled.length === 1 ? 'it' : 'them'}.
            </strong>
          </p>
          <ul>
            {disabled.map((endpoint) => (
              <li key={endpoint.id}>
                <UrlText url={endpoint.url} />: {endpoint.disabledReason ?? 'Disabled'}
              </li>
            ))}
          </ul>
        </div>
      )}
      <section aria-labelledby="endpoints">
        <h2 id="endpoints">Endpoints</h2>
        <Adder label="Add an endpoint">
          {(close) =>
            secret ? (
              <NewSecret
                shown={secret}
                onDone={() => {
                  setSecret(undefined);
                  close();
                }}
              />
            ) : (
              <CreateEndpointForm
                onCreated={async (created) => {
                  setSecret({ url: created.url, secret: created.secret, rotated: false });
                  await endpoints.reload();
                }}
              />
            )
          }
        </Adder>
        <ErrorMessage message={endpoints.error?.message ?? change.error?.message} />
        {!endpoints.data && !endpoints.error && <Loading what="the endpoints" />}
        {endpoints.data && (
          <Table caption="Webhook endpoints of the workspace, oldest first" columns={columns} rows={endpoints.data} rowKey={(endpoint) => endpoint.id} empty="No endpoints yet." />
        )}
      </section>
      {viewing && <Deliveries key={viewing.id} endpoint={viewing} />}
      <Dialog
        open={!!deleting}
        title="Delete this endpoint?"
        onClose={() => {
          remove.clearError();
          setDeleting(undefined);
        }}
        busy={remove.busy}
        returnFocus="endpoints"
        confirm={{ label: 'Delete endpoint', busyLabel: 'Deleting…', error: remove.error?.message, onConfirm: confirmDelete }}
      >
        <p>
          Nothing more is sent to <code>{deleting?.url}</code>; its queued deliveries and its delivery log go with it.
        </p>
      </Dialog>
    </Page>
  );
}

/**
 * The URL's refusal in words. A private address is explained, why and how a test setup allows one, since the server's
 * message alone leaves a person with a receiver on their own machine or network nowhere to go: the server's
 * allow-list, `MEDIA_FETCH_ALLOW_HOSTS` (src/process/config.ts, docs/events.md), trusts the hosts it names.
 */
function urlRefusal(error: ApiError | undefined): string | undefined {
  const said = errorFor(error, 'url');
  if (!said || error?.code !== 'URL_NOT_ALLOWED' || !/is not a public internet address/.test(said)) return said;
  // The server names the host refused (the URL's, as submitted): `10.1.2.3 is not a public internet address; …`.
  const host = said.split(' ')[0]!;
  return (
    `${host} is a private address, and webhooks go only to public internet addresses, so that no one can make this ` +
    `server call into the network it runs in. For a test setup, whoever runs Postwise can allow this host by adding it ` +
    `to the server’s MEDIA_FETCH_ALLOW_HOSTS setting (comma-separated: ${host}, or ${host}:8080 for one port only) and ` +
    'restarting the server. A public service should leave it empty.'
  );
}

function CreateEndpointForm({ onCreated }: { onCreated: (created: Schema<'WebhookEndpointWithSecret'>) => Promise<void> }) {
  const form = useRef<HTMLFormElement>(null);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [types, setTypes] = useState<EventType[]>([]);
  const create = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (create.busy) return;
    const result = await create.run(() =>
      call(api.POST('/webhooks', { body: { url: url.trim(), eventTypes: types, ...(description.trim() && { description: description.trim() }) } })),
    );
    if (!result.ok) return focusFirstInvalid(form.current);
    setUrl('');
    setDescription('');
    setTypes([]);
    await onCreated(result.data);
  };

  return (
    <form ref={form} onSubmit={submit} aria-busy={create.busy ? 'true' : undefined}>
      <Field
        label="URL"
        name="url"
        type="url"
        value={url}
        onInput={setUrl}
        required
        hint="Where the events are POSTed: a public http or https address; redirects are not followed."
        error={urlRefusal(create.error)}
      />
      <Field label="Description" name="description" value={description} onInput={setDescription} hint="What receives them, for the people who read this page." error={errorFor(create.error, 'description')} />
      <fieldset>
        <legend>Events to send</legend>
        <p class="hint" id="event-types-hint">
          None ticked: every event, including types added later.
        </p>
        {EVENT_TYPE_NAMES.map((type) => (
          <label key={type} class="checkbox">
            <input
              type="checkbox"
              name="eventTypes"
              value={type}
              checked={types.includes(type)}
              aria-describedby="event-types-hint"
              onChange={(event) => {
                const checked = (event.currentTarget as HTMLInputElement).checked;
                setTypes((current) => (checked ? [...current, type] : current.filter((other) => other !== type)));
              }}
            />{' '}
            <code>{type}</code>
          </label>
        ))}
      </fieldset>
      <ErrorMessage message={formError(create.error, ['url', 'description'])} />
      <SubmitButton busy={create.busy} busyLabel="Adding…">
        Add endpoint
      </SubmitButton>
    </form>
  );
}

/** The signing secret, this once. */
function NewSecret({ shown, onDone }: { shown: { url: string; secret: string; rotated: boolean }; onDone: () => void }) {
  return (
    <div class="callout">
      <p class="warning">
        <strong>Copy this signing secret now: it will not be shown again.</strong> Your receiver verifies each delivery with it (any Standard Webhooks
        library does).{shown.rotated ? ' The previous secret keeps signing too for 24 hours, while your receiver moves to this one.' : ''}
      </p>
      <CopyField label={`Signing secret for ${shown.url}`} value={shown.secret} autoFocus />
      <button type="button" onClick={onDone}>
        I have copied it
      </button>
    </div>
  );
}

/** An endpoint's delivery log, newest first, with a way to send any delivery again. */
function Deliveries({ endpoint }: { endpoint: Endpoint }) {
  const deliveries = useLoad(() => call(api.GET('/webhooks/{id}/deliveries', { params: { path: { id: endpoint.id }, query: { limit: 50 } } })));
  const redeliver = useAction();
  const again = async (delivery: Delivery) => {
    const result = await redeliver.run(() =>
      call(api.POST('/webhooks/{id}/deliveries/{deliveryId}/redeliver', { params: { path: { id: endpoint.id, deliveryId: delivery.id } } })),
    );
    if (result.ok) await deliveries.reload();
  };
  const lastOf = (delivery: Delivery) => {
    const last = delivery.attempts.at(-1);
    if (!last) return 'Not sent yet';
    return last.responseStatus !== null ? `HTTP ${last.responseStatus} in ${last.durationMs} ms` : (last.error ?? 'No answer');
  };
  const columns: Column<Delivery>[] = [
    {
      header: 'Event',
      cell: (delivery) => (
        <>
          <code>{delivery.eventType}</code> <span class="hint">{delivery.eventId}</span>
        </>
      ),
    },
    {
      header: 'Status',
      cell: (delivery) =>
        delivery.status === 'delivered'
          ? 'Delivered'
          : delivery.status === 'failed'
            ? 'Failed'
            : `Pending${delivery.nextAttemptAt ? `, next try ${formatDateTime(delivery.nextAttemptAt)}` : ''}`,
    },
    { header: 'Attempts', cell: (delivery) => delivery.attempts.length },
    { header: 'Last answer', cell: lastOf },
    { header: 'Created', cell: (delivery) => formatDateTime(delivery.createdAt) },
    {
      header: 'Actions',
      hiddenHeader: true,
      cell: (delivery) => (
        <button type="button" onClick={() => void again(delivery)} disabled={redeliver.busy || !endpoint.enabled}>
          Send again<span class="visually-hidden"> {delivery.eventType} {delivery.eventId}</span>
        </button>
      ),
    },
  ];
  return (
    <section aria-labelledby="deliveries">
      <h2 id="deliveries">
        Deliveries to <UrlText url={endpoint.url} />
      </h2>
      <button type="button" onClick={() => void deliveries.reload()}>
        Refresh
      </button>
      <ErrorMessage message={deliveries.error?.message ?? redeliver.error?.message} />
      {!deliveries.data && !deliveries.error && <Loading what="the deliveries" />}
      {deliveries.data && (
        <Table caption="Deliveries to the endpoint, newest first" columns={columns} rows={deliveries.data.items} rowKey={(delivery) => delivery.id} empty="Nothing sent to it yet." />
      )}
    </section>
  );
}
