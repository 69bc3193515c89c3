import { useId, useState } from 'preact/hooks';
import { api, call, type Schema } from '../api.js';
import { CallsChart } from '../components/calls-chart.js';
import { ErrorMessage } from '../components/form.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { formatBytes, formatDateTime, formatDay, formatNumber } from '../format.js';
import { useLoad } from '../hooks.js';
import { platformLabel } from '../platforms.js';

type Workspace = Schema<'Workspace'>;

const PERIODS = [7, 30, 90] as const;

/** Calls made with the workspace's keys (GET /usage), and its plan's quotas, storage and rate limit (GET /workspace). */
export function UsagePage(_props: PageProps) {
  const initial = Number(new URL(location.href).searchParams.get('days'));
  const [days, setDays] = useState<number>(PERIODS.includes(initial as 7) ? initial : 30);
  const usage = useLoad(() => call(api.GET('/usage', { params: { query: { days } } })), [days]);
  const daily = useLoad(() => call(api.GET('/usage/daily', { params: { query: { days } } })), [days]);
  const workspace = useLoad(() => call(api.GET('/workspace')));

  const choose = (value: number) => {
    setDays(value);
    // The period is in the address, so that a reload or a shared link shows the same.
    history.replaceState(null, '', `/usage?days=${value}`);
  };
  const loading = (!!usage.data && usage.data.windowDays !== days) || (!!daily.data && daily.data.windowDays !== days);

  return (
    <Page title="Usage" intro="Calls made with this workspace's API keys, over REST and MCP (the dashboard's own calls are not counted), and what its plan allows.">
      <section aria-labelledby="calls">
        <h2 id="calls">Calls</h2>
        <fieldset class="segmented">
          <legend>Period</legend>
          {PERIODS.map((value) => (
            <label key={value}>
              <input type="radio" name="days" value={value} checked={days === value} onChange={() => choose(value)} />
              {value} days
            </label>
          ))}
        </fieldset>
        <ErrorMessage message={usage.error?.message} />
        {!usage.data && !usage.error && <Loading what="the calls" />}
        {usage.data && (
          <div aria-busy={loading ? 'true' : undefined}>
            <dl class="totals">
              <div>
                <dt>API (REST)</dt>
                <dd>
                  {formatNumber(usage.data.api.calls)} calls, {formatNumber(usage.data.api.errors)} errors
                </dd>
              </div>
              <div>
                <dt>MCP</dt>
                <dd>
                  {formatNumber(usage.data.mcp.calls)} calls, {formatNumber(usage.data.mcp.errors)} errors
                </dd>
              </div>
              <div>
                <dt>Last call</dt>
                <dd>{formatDateTime(latest(usage.data.api.lastUsedAt, usage.data.mcp.lastUsedAt), 'None in this period')}</dd>
              </div>
            </dl>
            <ErrorMessage message={daily.error?.message} />
            {daily.data && <CallsChart days={daily.data.items} />}
          </div>
        )}
      </section>
      <section aria-labelledby="plan">
        <h2 id="plan">Plan and limits</h2>
        <ErrorMessage message={workspace.error?.message} />
        {!workspace.data && !workspace.error && <Loading what="the plan" />}
        {workspace.data && <PlanLimits workspace={workspace.data} />}
      </section>
    </Page>
  );
}

function PlanLimits({ workspace }: { workspace: Workspace }) {
  const { plan, quotas, storage, subscription } = workspace;
  return (
    <>
      <p>
        Plan <strong>{plan.name}</strong>
        {subscription === 'active' ? ', subscription active.' : ', no active subscription.'} API keys and MCP may make{' '}
        <strong>{formatNumber(plan.rateLimitPerMinute)} requests a minute</strong>; beyond that, calls are refused with RATE_LIMITED until the minute
        is over.
      </p>
      <h3>Posts this month</h3>
      {quotas.map((quota) => (
        <Gauge
          key={quota.platform}
          label={`${platformLabel(quota.platform)} posts in ${formatMonth(quota.period)}`}
          used={quota.used}
          limit={quota.limit}
          text={quota.limit === 0 ? 'The plan allows no posts to this platform' : `${formatNumber(quota.used)} of ${formatNumber(quota.limit)} posts`}
        />
      ))}
      <h3>Storage</h3>
      <Gauge
        label="Media storage"
        used={storage.usedBytes}
        limit={storage.allowanceBytes}
        text={`${formatBytes(storage.usedBytes)} of ${formatBytes(storage.allowanceBytes)}`}
      />
    </>
  );
}

/** A used-against-allowed figure: a <meter> with its label, and the same numbers in words. */
function Gauge({ label, used, limit, text }: { label: string; used: number; limit: number; text: string }) {
  const id = useId();
  return (
    <div class="gauge">
      {limit === 0 ? <p class="gauge-label">{label}</p> : <label for={id}>{label}</label>}
      {limit > 0 && <meter id={id} min={0} max={Math.max(limit, 1)} value={Math.min(used, limit)} low={limit * 0.8} high={limit * 0.95} optimum={0} aria-describedby={`${id}-text`} />}
      <p id={`${id}-text`} class="gauge-text">
        {text}
      </p>
    </div>
  );
}

function latest(a: string | null, b: string | null): string | null {
  if (!a || !b) return a ?? b;
  return a > b ? a : b;
}

const formatMonth = (period: string) => formatDay(`${period}-01`, { month: 'long', year: 'numeric' });
