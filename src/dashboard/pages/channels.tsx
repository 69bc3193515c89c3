import { Fragment } from 'preact';
import { useRef, useState } from 'preact/hooks';
import { api, call, errorFor, formError, type Schema } from '../api.js';
import { Dialog } from '../components/dialog.js';
import { UrlText } from '../components/url-text.js';
import { ErrorMessage, Field, focusFirstInvalid, SubmitButton } from '../components/form.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { failingPostsUrl } from '../components/failing-count.js';
import { Link } from '../router.js';
import { formatDate, formatDateTime } from '../format.js';
import { useAction, useLoad } from '../hooks.js';
import { platformLabel, PLATFORMS, rules, type Platform } from '../platforms.js';

type Integration = Schema<'Integration'>;
type PlatformAvailability = Schema<'Platform'>;

/** The connected channels, their health in words, and connecting more. */
export function ChannelsPage(_props: PageProps) {
  const channels = useLoad(() => call(api.GET('/integrations')));
  // Whether this server can connect each platform (LinkedIn needs its app's client): GET /platforms, as the API says it.
  const available = useLoad(() => call(api.GET('/platforms')));
  const [disconnecting, setDisconnecting] = useState<Integration>();
  const [reconnecting, setReconnecting] = useState<Integration>();
  const disconnect = useAction();
  const appPasswordForm = useRef<HTMLFormElement>(null);

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

  /** A channel whose platform takes an app password is reconnected with the form below. */
  const reconnectByForm = (channel: Integration) => {
    setReconnecting(channel);
    appPasswordForm.current?.scrollIntoView({ block: 'start' });
    appPasswordForm.current?.querySelector('input')?.focus();
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
                onReconnectByForm={reconnectByForm}
                onDisconnect={() => {
                  disconnect.clearError();
                  setDisconnecting(channel);
                }}
              />
            ))}
          </ul>
        )}
      </section>

      {/* A section per platform, as its rules say it is connected. */}
      {PLATFORMS.map((platform) => {
        const { label, connect } = rules[platform];
        const headingId = `connect-${platform.toLowerCase()}`;
        return (
          <section key={platform} aria-labelledby={headingId}>
            <h2 id={headingId}>{`Connect a ${label} account`}</h2>
            {connect.method === 'oauth' ? (
              <OAuthConnect
                platform={platform}
                explained={connect.explained}
                asksServer={connect.asksServer ?? false}
                availability={available.data?.find((item) => item.platform === platform)}
                error={available.error?.message}
              />
            ) : (
              <ConnectBlueskyForm
                formRef={appPasswordForm}
                reconnecting={reconnecting}
                onConnected={(channel) => {
                  setReconnecting(undefined);
                  replace(channel);
                }}
              />
            )}
          </section>
        );
      })}

      <Dialog
        open={!!disconnecting}
        title={`Disconnect ${disconnecting?.name ?? ''}?`}
        onClose={() => setDisconnecting(undefined)}
        busy={disconnect.busy}
        returnFocus="channels"
        confirm={{ label: 'Disconnect', busyLabel: 'Disconnecting…', error: disconnect.error?.message, onConfirm: confirmDisconnect }}
      >
        <p>
          Postwise forgets this channel's credentials{disconnecting && rules[disconnecting.platform].revokes ? ` and revokes them at ${platformLabel(disconnecting.platform)}` : ''}. The channel, its posts
          and its schedules stay, but posts that come due fail until you connect the same account again.
        </p>
      </Dialog>
    </Page>
  );
}

interface ChannelCardProps {
  channel: Integration;
  onChanged: (channel: Integration) => void;
  onReconnectByForm: (channel: Integration) => void;
  onDisconnect: () => void;
}

/**
 * A channel whose schedules failed or wait for a retry (`failingSchedules`): how many, the latest reason, and a link to
 * exactly their posts.
 */
function FailingFlag({ channel }: { channel: Integration }) {
  const count = channel.failingSchedules;
  if (count === 0) return null;
  const last = channel.lastFailure;
  return (
    <div class="channel-failing" role="group" aria-label={`Failing posts on ${channel.name}`}>
      <p>
        <span class="badge bad">Failing</span> {count} {count === 1 ? 'schedule' : 'schedules'} failed or waiting to be retried.
        {last?.reason && (
          <>
            {' '}
            Latest{last.at ? `, ${formatDateTime(last.at)}` : ''}: {last.reason}
          </>
        )}
      </p>
      <p>
        <Link href={failingPostsUrl(channel.id)}>
          See the failing posts<span class="visually-hidden"> on {channel.name}</span>
        </Link>
      </p>
    </div>
  );
}

function ChannelCard({ channel, onChanged, onReconnectByForm, onDisconnect }: ChannelCardProps) {
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
        <div class="channel-who">
          <h3 id={headingId}>{channel.name}</h3>
          {/* The account's handle where its platform has one (`@user@domain` on Mastodon, `@user` on Threads). */}
          {channel.handle && <p class="handle">{channel.handle}</p>}
          <p class="platform">{platformLabel(channel.platform)}</p>
        </div>
      </div>
      <p>
        <span class={`badge ${status.tone}`}>{status.label}</span>
      </p>
      {status.detail && <p class="status-detail">{status.detail}</p>}
      <FailingFlag channel={channel} />
      {channel.lastValidatedAt && <p class="hint">Last checked {formatDateTime(channel.lastValidatedAt)}.</p>}
      <div class="actions">
        {canRefresh && (
          <button type="button" onClick={check} disabled={refresh.busy} aria-busy={refresh.busy ? 'true' : undefined}>
            {refresh.busy ? 'Checking…' : 'Check connection'}
            <span class="visually-hidden"> of {channel.name}</span>
          </button>
        )}
        {rules[channel.platform].connect.method === 'app-password' ? (
          <button type="button" onClick={() => onReconnectByForm(channel)}>
            Reconnect<span class="visually-hidden"> {channel.name}</span>
          </button>
        ) : (
          <ConnectButton platform={channel.platform} label="Reconnect" labelSuffix={channel.name} />
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
      detail: channel.connectionError ?? `Choose whom it posts as on the page ${platformLabel(channel.platform)} sent you back to, or connect it again.`,
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

/** The platform connected with an app password (rules' `connect`) is Bluesky, and this its own form: POST /integrations/bluesky. */
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

/**
 * An OAuth platform's connect section: its button when this server can connect it, otherwise what the server needs
 * (the settings GET /platforms names, the redirect URI to register) for whoever runs it, and where the docs say more;
 * or, for a platform no setting makes connectable (one this version cannot connect yet), the reason alone.
 */
function OAuthConnect({
  platform,
  explained,
  asksServer,
  availability,
  error,
}: {
  platform: Platform;
  explained: string;
  asksServer: boolean;
  availability?: PlatformAvailability;
  error?: string;
}) {
  if (error) return <ErrorMessage message={error} />;
  if (!availability) return <Loading what={`whether ${platformLabel(platform)} can be connected`} />;
  const label = platformLabel(platform);
  if (availability.connectable) {
    return (
      <>
        <p>{explained}</p>
        {asksServer ? <ServerConnect platform={platform} /> : <ConnectButton platform={platform} label={`Continue to ${label}`} />}
      </>
    );
  }
  const settings = availability.settings;
  // Nothing an operator can set: this version cannot connect it yet (GET /platforms says why).
  if (settings.length === 0) {
    return (
      <div class="callout" data-platform-unavailable={platform}>
        <p>
          <strong>{availability.unavailableReason ?? `${label} cannot be connected yet`}.</strong>
        </p>
      </div>
    );
  }
  return (
    <div class="callout" data-platform-unavailable={platform}>
      <p>
        <strong>{label} cannot be connected on this server yet.</strong> Whoever runs Postwise sets{' '}
        {settings.map((setting, index) => (
          <Fragment key={setting}>
            {index > 0 && (index === settings.length - 1 ? ' and ' : ', ')}
            <code>{setting}</code>
          </Fragment>
        ))}{' '}
        (the client of a {label} app) and restarts it; {label} is then offered here.
      </p>
      {availability.redirectUri && (
        <p>
          The redirect URL to register in the {label} app: <UrlText url={availability.redirectUri} />
        </p>
      )}
      <p class="hint">
        How: “{label}” in <code>docs/publishing.md</code>, and “Configuration” in Postwise's <code>README.md</code>.
      </p>
    </div>
  );
}

/** A platform on the member's own server (Mastodon): its address, then that server's consent page. */
function ServerConnect({ platform }: { platform: Platform }) {
  const connect = useAction();
  const [instance, setInstance] = useState('');
  const form = useRef<HTMLFormElement>(null);
  const submit = async (event: Event) => {
    event.preventDefault();
    const result = await connect.run(() => call(api.POST('/integrations/connect', { body: { platform, instance: instance.trim() } })));
    if (result.ok) location.assign(result.data.redirectUrl);
    else focusFirstInvalid(form.current);
  };
  return (
    <form ref={form} onSubmit={submit} noValidate>
      <Field
        label="Your server"
        name="instance"
        value={instance}
        onInput={setInstance}
        required
        placeholder="mastodon.social"
        autoComplete="url"
        hint="Where your account is: mastodon.social, hachyderm.io, or your own server's address."
        error={errorFor(connect.error, 'instance')}
      />
      <ErrorMessage message={formError(connect.error, ['instance'])} />
      <SubmitButton busy={connect.busy} busyLabel={`Opening your server…`}>
        {`Continue to your ${platformLabel(platform)} server`}
      </SubmitButton>
    </form>
  );
}

/** Starts a platform's OAuth flow: the server answers where to go, and the browser goes there. */
function ConnectButton({ platform, label, labelSuffix }: { platform: Platform; label: string; labelSuffix?: string }) {
  const connect = useAction();
  const start = async () => {
    const result = await connect.run(() => call(api.POST('/integrations/connect', { body: { platform } })));
    if (result.ok) location.assign(result.data.redirectUrl);
  };
  return (
    <div class="inline-action">
      <button type="button" onClick={start} disabled={connect.busy} aria-busy={connect.busy ? 'true' : undefined}>
        {connect.busy ? `Opening ${platformLabel(platform)}…` : label}
        {labelSuffix && <span class="visually-hidden"> {labelSuffix}</span>}
      </button>
      <ErrorMessage message={connect.error?.message} />
    </div>
  );
}
