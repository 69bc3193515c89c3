import { useId, useState } from 'preact/hooks';
import { formatDay, formatNumber } from '../format.js';

export interface DayOfCalls {
  date: string;
  api: { calls: number; errors: number };
  mcp: { calls: number; errors: number };
}

/**
 * Calls per day as an inline SVG bar chart (each bar: the calls that succeeded, and the errors below them), with the
 * same numbers as a table for screen readers and for reading exact values. No chart library: it is forty lines.
 * A bar per calendar day: a window of N days that starts mid-day touches N + 1 of them (GET /usage/daily).
 */
export function CallsChart({ days }: { days: DayOfCalls[] }) {
  const titleId = useId();
  const tableId = useId();
  const [showTable, setShowTable] = useState(false);
  const totals = days.map((day) => ({ date: day.date, calls: day.api.calls + day.mcp.calls, errors: day.api.errors + day.mcp.errors }));
  const highest = Math.max(1, ...totals.map((day) => day.calls));
  const allCalls = totals.reduce((sum, day) => sum + day.calls, 0);
  const allErrors = totals.reduce((sum, day) => sum + day.errors, 0);
  const barWidth = 10;
  const height = 100;
  const first = days[0];
  const last = days.at(-1);
  return (
    <figure class="chart">
      <div class="chart-frame">
        <span class="chart-max" aria-hidden="true">
          {formatNumber(highest)}
        </span>
        <svg
          role="img"
          aria-labelledby={titleId}
          viewBox={`0 0 ${days.length * barWidth} ${height}`}
          preserveAspectRatio="none"
          class="chart-bars"
        >
          <title id={titleId}>
            {`Calls per day over ${days.length} days: ${formatNumber(allCalls)} calls, ${formatNumber(allErrors)} of them errors. Each day is in the table “The numbers, day by day”.`}
          </title>
          {totals.map((day, index) => {
            const callsHeight = (day.calls / highest) * height;
            const errorsHeight = (day.errors / highest) * height;
            const x = index * barWidth + 1;
            return (
              <g key={day.date}>
                <rect class="bar-ok" x={x} y={height - callsHeight} width={barWidth - 2} height={callsHeight - errorsHeight} />
                <rect class="bar-errors" x={x} y={height - errorsHeight} width={barWidth - 2} height={errorsHeight} />
              </g>
            );
          })}
        </svg>
      </div>
      {first && last && (
        <div class="chart-axis" aria-hidden="true">
          <span>{formatDay(first.date)}</span>
          <span>{formatDay(last.date)}</span>
        </div>
      )}
      <figcaption>
        <span class="legend">
          <span class="swatch ok" aria-hidden="true" /> Calls that succeeded
        </span>
        <span class="legend">
          <span class="swatch errors" aria-hidden="true" /> Errors (answered with a status of 400 or more)
        </span>
      </figcaption>
      {/* A disclosure button rather than <details>, whose <summary> some browsers expose with no role or name. */}
      <button type="button" class="link-button disclosure" aria-expanded={showTable} aria-controls={tableId} onClick={() => setShowTable(!showTable)}>
        <span aria-hidden="true">{showTable ? '▾ ' : '▸ '}</span>
        The numbers, day by day
      </button>
      {showTable && (
        <div class="table-scroll" id={tableId} tabIndex={0} role="region" aria-label="Calls per day">
          <table>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col">API calls</th>
                <th scope="col">API errors</th>
                <th scope="col">MCP calls</th>
                <th scope="col">MCP errors</th>
              </tr>
            </thead>
            <tbody>
              {days.map((day) => (
                <tr key={day.date}>
                  <th scope="row">{formatDay(day.date, { dateStyle: 'medium' })}</th>
                  <td>{formatNumber(day.api.calls)}</td>
                  <td>{formatNumber(day.api.errors)}</td>
                  <td>{formatNumber(day.mcp.calls)}</td>
                  <td>{formatNumber(day.mcp.errors)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </figure>
  );
}
