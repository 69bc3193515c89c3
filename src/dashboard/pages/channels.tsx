import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import type { PageProps } from '../app.js';
import { ConfirmDialog } from '../components/dialog.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page } from '../components/page.js';
import { formatDate, formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';

type Integration = Schema<'Integration'>;

const PLATFORM_LABELS: Record<Integration['platform'], string> = { BLUESKY: 'Bluesky', LINKEDIN: 'LinkedIn' };

/** The connected channels, their health in words, and connecting more. */
export function ChannelsPage(_props: PageProps) {
  const channels = useLoad(() => call(api.GET('/integrations')));
  const [disconnecting, setDisconnecting] = useState<Integration>();
  const [reconnecting, setReconnecting] = useState<Integration>();
  const disconnect = useAction();
  const blueskyForm = useRef<HTMLFormElement>(null);

  /** Puts a channel the server answered in place of the one the list had (or adds it). */
  const replace = (channel: Integration) =>
    channels.setData((list) => (list?.some((item) => item.id === channel.id) ? list.map((item) => (item.id === channel.id ? channel : item)) : [...(list ?? []), channel]));

  const confirmDisconnect = async () => {
    if (!disconnecting) return;
    const result = await disconnect.run(() => call(api.POST('/integrations/{id}/disconnect', { params: { path: { id: disconnecting.id } } })));
    if (!result.ok) return;
    replace(result.data);
    setDisconnecting(undefined);
  };

  const reconnectBluesky = (channel: Integration) => {
    setReconnecting(channel);
    blueskyForm.current?.scrollIntoView({ block: 'start' });
    blueskyForm.current?.querySelector('input')?.focus();
  };

  return (
    <Page title="Channels" intro="The social accounts this workspace publishes to.">
      <section aria-labelledby="channels">
        <h2 id="channels">Connected channels</h2>
        <ErrorMessage message={channels.error?.message} />
        {!channels.data && !channels.error && <Loading what="the channels" />}
        {channels.data?.length === 0 && <p>No channel yet: connect one below.</p>}
        {channels.data && channels.data.length > 0 && (
          <ul class="cards">
            {channels.data.map((channel) => (
              <ChannelCard
                key={channel.id}
                channel={channel}
                onChanged={replace}
                onReconnectBluesky={reconnectBluesky}
                onDisconnect={() => {
                  disconnect.clearError();
                  setDisconnecting(channel);
                }}
              />
            ))}
          </ul>
        )}
      </section>

      <section aria-labelledby="connect-bluesky">
        <h2 id="connect-bluesky">Connect a Bluesky account</h2>
        <ConnectBlueskyForm
          formRef={blueskyForm}
          reconnecting={reconnecting}
          onConnected={(channel) => {
            setReconnecting(undefined);
            replace(channel);
          }}
        />
      </section>

      <section aria-labelledby="connect-linkedin">
        <h2 id="connect-linkedin">Connect a LinkedIn account</h2>
        <p>LinkedIn asks you to sign in and to allow Postwise to post; if you manage LinkedIn pages, you then choose whom the channel posts as.</p>
        <ConnectLinkedInButton label="Continue to LinkedIn" />
      </section>

      <ConfirmDialog
        open={!!disconnecting}
        title={`Disconnect ${disconnecting?.name ?? ''}?`}
        confirmLabel="Disconnect"
        busyLabel="Disconnecting…"
        busy={disconnect.busy}
        error={disconnect.error?.message}
        fallbackFocus="channels"
        onConfirm={confirmDisconnect}
        onCancel={() => setDisconnecting(undefined)}
      >
        <p>
          Postwise forgets this channel's credentials{disconnecting?.platform === 'LINKEDIN' ? ' and revokes them at LinkedIn' : ''}. The channel, its posts
          and its schedules stay, but posts that come due fail until you connect the same account again.
        </p>
      </ConfirmDialog>
    </Page>
  );
}

interface ChannelCardProps {
  channel: Integration;
  onChanged: (channel: Integration) => void;
  onReconnectBluesky: (channel: Integration) => void;
  onDisconnect: () => void;
}

function ChannelCard({ channel, onChanged, onReconnectBluesky, onDisconnect }: ChannelCardProps) {
  const refresh = useAction();
  const [checked, setChecked] = useState('');
  const status = statusOf(channel);
  const headingId = `channel-${channel.id}`;

  const check = async () => {
    setChecked('');
    const result = await refresh.run(() => call(api.POST('/integrations/{id}/refresh', { params: { path: { id: channel.id } } })));
    if (!result.ok) return;
    onChanged(result.data);
    setChecked(`Checked ${formatDateTime(new Date().toISOString())}: ${statusOf(result.data).label.toLowerCase()}.`);
  };
  const canRefresh = channel.connectStatus === 'ACTIVE' && channel.tokenStatus !== 'MISSING';

  return (
    <li class="card channel">
      <div class="channel-head">
        <Avatar channel={channel} />
        <div>
          <h3 id={headingId}>{channel.name}</h3>
          <p class="platform">{PLATFORM_LABELS[channel.platform]}</p>
        </div>
      </div>
      <p>
        <span class={`badge ${status.tone}`}>{status.label}</span>
      </p>
      {status.detail && <p class="status-detail">{status.detail}</p>}
      {channel.hasFailedSchedules && <p class="status-detail">Some posts to this channel failed to publish.</p>}
      {channel.lastValidatedAt && <p class="hint">Last checked {formatDateTime(channel.lastValidatedAt)}.</p>}
      <div class="actions">
        {canRefresh && (
          <button type="button" onClick={check} disabled={refresh.busy} aria-busy={refresh.busy ? 'true' : undefined}>
            {refresh.busy ? 'Checking…' : 'Check connection'}
            <span class="visually-hidden"> of {channel.name}</span>
          </button>
        )}
        {channel.platform === 'BLUESKY' ? (
          <button type="button" onClick={() => onReconnectBluesky(channel)}>
            Reconnect<span class="visually-hidden"> {channel.name}</span>
          </button>
        ) : (
          <ConnectLinkedInButton label="Reconnect" labelSuffix={channel.name} />
        )}
        {channel.tokenStatus !== 'MISSING' && (
          <button type="button" class="danger" onClick={onDisconnect}>
            Disconnect<span class="visually-hidden"> {channel.name}</span>
          </button>
        )}
      </div>
      <ErrorMessage message={refresh.error?.message} />
      <p role="status" class="hint">
        {checked}
      </p>
    </li>
  );
}

function Avatar({ channel }: { channel: Integration }) {
  const [broken, setBroken] = useState(false);
  if (channel.image && !broken) return <img class="avatar" src={channel.image} alt="" width={48} height={48} onError={() => setBroken(true)} />;
  return (
    <span class="avatar initial" aria-hidden="true">
      {(channel.name.trim()[0] ?? '?').toUpperCase()}
    </span>
  );
}

/** A channel's state in words, from what the server says about its connection. */
function statusOf(channel: Integration): { label: string; tone: 'ok' | 'warn' | 'bad'; detail?: string } {
  if (channel.connectStatus === 'PENDING_SELECTION') {
    return {
      label: 'Waiting for an account to be chosen',
      tone: 'warn',
      detail: channel.connectionError ?? 'Choose whom it posts as on the page LinkedIn sent you back to, or connect it again.',
    };
  }
  switch (channel.tokenStatus) {
    case 'VALID':
      return { label: 'Connected', tone: 'ok' };
    case 'EXPIRING':
      return {
        label: `Connection expires ${formatDate(channel.expiresAt)}`,
        tone: 'warn',
        detail: 'The platform does not let Postwise renew it: reconnect before then.',
      };
    case 'EXPIRED':
      return { label: 'Connection expired', tone: 'bad', detail: channel.connectionError ?? 'Reconnect to publish to it again.' };
    case 'REVOKED':
      return { label: 'Connection revoked', tone: 'bad', detail: channel.connectionError ?? 'Reconnect to publish to it again.' };
    case 'MISSING':
      return { label: 'Not connected', tone: 'bad', detail: channel.connectionError ?? 'No credentials are stored: connect it to publish to it.' };
  }
}

interface ConnectBlueskyFormProps {
  formRef: { current: HTMLFormElement | null };
  reconnecting: Integration | undefined;
  onConnected: (channel: Integration) => void;
}

function ConnectBlueskyForm({ formRef, reconnecting, onConnected }: ConnectBlueskyFormProps) {
  const [handle, setHandle] = useState('');
  const [appPassword, setAppPassword] = useState('');
  const [serviceUrl, setServiceUrl] = useState('');
  const [connected, setConnected] = useState('');
  const connect = useAction();

  const submit = async (event: Event) => {
    event.preventDefault();
    if (connect.busy) return;
    setConnected('');
    const body = { handle: handle.trim().replace(/^@/, ''), appPassword: appPassword.trim(), ...(serviceUrl.trim() && { serviceUrl: serviceUrl.trim() }) };
    const result = await connect.run(() => call(api.POST('/integrations/bluesky', { body })));
    if (!result.ok) return focusFirstInvalid(formRef.current);
    setHandle('');
    setAppPassword('');
    setServiceUrl('');
    setConnected(`${result.data.name} is connected.`);
    onConnected(result.data);
  };

  return (
    <form ref={formRef} onSubmit={submit} aria-busy={connect.busy ? 'true' : undefined}>
      {reconnecting && <p class="callout">Reconnecting {reconnecting.name}: enter its handle and a new app password.</p>}
      <Field
        label="Handle"
        name="handle"
        value={handle}
        onInput={setHandle}
        required
        autoComplete="username"
        placeholder="alice.bsky.social"
        error={errorFor(connect.error, 'handle')}
      />
      <Field
        label="App password"
        type="password"
        name="appPassword"
        value={appPassword}
        onInput={setAppPassword}
        required
        autoComplete="off"
        hint="Not your account password: make one in Bluesky under Settings → Privacy and security → App passwords."
        error={errorFor(connect.error, 'appPassword')}
      />
      <Field
        label="Server (PDS) URL"
        type="url"
        name="serviceUrl"
        value={serviceUrl}
        onInput={setServiceUrl}
        placeholder="https://bsky.social"
        hint="Only for an account on a server of its own; bsky.social otherwise."
        error={errorFor(connect.error, 'serviceUrl')}
      />
      <ErrorMessage message={formError(connect.error, ['handle', 'appPassword', 'serviceUrl'])} />
      <SubmitButton busy={connect.busy} busyLabel="Connecting…">
        Connect Bluesky
      </SubmitButton>
      <p role="status" class="success">
        {connected}
      </p>
    </form>
  );
}

/** Starts LinkedIn's OAuth flow: the server answers where to go, and the browser goes there. */
function ConnectLinkedInButton({ label, labelSuffix }: { label: string; labelSuffix?: string }) {
  const connect = useAction();
  const start = async () => {
    const result = await connect.run(() => call(api.POST('/integrations/connect', { body: { platform: 'LINKEDIN' } })));
    if (result.ok) location.assign(result.data.redirectUrl);
  };
  return (
    <div class="inline-action">
      <button type="button" onClick={start} disabled={connect.busy} aria-busy={connect.busy ? 'true' : undefined}>
        {connect.busy ? 'Opening LinkedIn…' : label}
        {labelSuffix && <span class="visually-hidden"> {labelSuffix}</span>}
      </button>
      <ErrorMessage message={connect.error?.message} />
    </div>
  );
}
