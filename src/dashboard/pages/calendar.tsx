import { useMemo, useRef, useState } from 'preact/hooks';
import { api, call, errorFor } from '../api.js';
import { useCalendar, type CalendarFilters, type CalendarSchedule, type Platform, type Range, type Status } from '../calendar/data.js';
import { Entry } from '../calendar/entry.js';
import { followInApp, ScheduleDialog, type DialogStep } from '../calendar/schedule-dialog.js';
import { excerpt, STATUS_LABELS, STATUSES, StatusLegend } from '../calendar/status.js';
import { platformLabel, PLATFORMS } from '../platforms.js';
import {
  addDays,
  addMonths,
  dayOf,
  instantAt,
  isDay,
  startOfMonth,
  startOfWeek,
  timeOf,
} from '../zoned-time.js';
import { ChevronLeft, ChevronRight } from 'lucide';
import { ErrorMessage } from '../components/form.js';
import { formatDateTime, formatDayLong, formatHour, zoneName } from '../format.js';
import { FilterPanel } from '../components/filter-panel.js';
import { Icon } from '../components/icon.js';
import { Loading, Page, type PageProps } from '../components/page.js';
import { useLoad } from '../hooks.js';
import { navigate, useLocation } from '../router.js';

type View = 'month' | 'week' | 'agenda';
const VIEWS: { view: View; label: string }[] = [
  { view: 'month', label: 'Month' },
  { view: 'week', label: 'Week' },
  { view: 'agenda', label: 'Agenda' },
];
const HOURS = Array.from({ length: 24 }, (_, hour) => hour);

/** `/calendar?view=month|week|agenda&date=YYYY-MM-DD`: the schedules of the workspace in its time zone. */
export function CalendarPage(_props: PageProps) {
  const workspace = useLoad(() => call(api.GET('/workspace')));
  const timeZone = workspace.data?.timeZone;
  return (
    <Page title="Calendar" intro="Drag an entry to another day or hour to move it; open it to move, retry or delete it.">
      <ErrorMessage message={workspace.error?.message} />
      {!timeZone && !workspace.error && <Loading what="the calendar" />}
      {timeZone && <Calendar timeZone={timeZone} />}
    </Page>
  );
}


/** The address of a view: its day, and the filters as repeated keys (as GET /schedules takes them). */
function calendarUrl(view: View, date: string, filters: CalendarFilters) {
  const params = new URLSearchParams({ view, date });
  for (const platform of filters.platforms) params.append('platforms', platform);
  for (const status of filters.statuses) params.append('statuses', status);
  return `/calendar?${params.toString()}`;
}

function filtersOf(params: URLSearchParams): CalendarFilters {
  const many = (name: string) => params.getAll(name).flatMap((value) => value.split(','));
  return {
    platforms: many('platforms').filter((value): value is Platform => (PLATFORMS as readonly string[]).includes(value)),
    statuses: many('statuses').filter((value): value is Status => (STATUSES as readonly string[]).includes(value)),
  };
}

function Calendar({ timeZone }: { timeZone: string }) {
  const url = useLocation();
  const today = dayOf(new Date(), timeZone);
  const asked = url.searchParams.get('view');
  const view: View = asked === 'week' || asked === 'agenda' ? asked : 'month';
  const date = isDay(url.searchParams.get('date')) ? url.searchParams.get('date')! : today;
  const filters = filtersOf(url.searchParams);
  const filterKey = `${filters.platforms.join()}|${filters.statuses.join()}`;

  // The agenda pages by the keyset cursor from its day; a month or a week is read whole.
  const [agendaPage, setAgendaPage] = useState<{ for: string; cursor?: { scheduledAt: string; id: string }; direction: 'forward' | 'backward' }>();
  const agendaKey = `${view}:${date}:${filterKey}`;
  const range: Range = useMemo(() => {
    if (view !== 'agenda') return { view, date, filters };
    const page = agendaPage?.for === agendaKey ? agendaPage : undefined;
    return { view, date, filters, direction: page?.direction ?? 'forward', ...(page?.cursor && { cursor: page.cursor }) };
  }, [view, date, filterKey, agendaPage, agendaKey]);
  const { listing, error, reload, loading } = useCalendar(range);

  const [announcement, setAnnouncement] = useState('');
  const [problem, setProblem] = useState<string>();
  const [openId, setOpenId] = useState<string>();
  const [step, setStep] = useState<DialogStep>('details');
  const lastOpened = useRef<CalendarSchedule | undefined>(undefined);
  const dragging = useRef<CalendarSchedule | undefined>(undefined);
  const [dropTarget, setDropTarget] = useState<string>();

  const schedules = listing?.schedules ?? [];
  const byId = new Map(schedules.map((schedule) => [schedule.id, schedule]));
  const opened = openId ? (byId.get(openId) ?? lastOpened.current) : undefined;
  if (opened) lastOpened.current = opened;

  const changed = async (message: string) => {
    setProblem(undefined);
    setAnnouncement(message);
    await reload();
  };

  /** Moves a schedule (by a drop or the Move-to dialog), then reads the range again. */
  const move = async (schedule: CalendarSchedule, scheduledAt: string) => {
    const result = await call(
      api.POST('/posts/schedules/{scheduleId}/reschedule', { params: { path: { scheduleId: schedule.id } }, body: { scheduledAt } }),
    );
    if (!result.ok) {
      const field = errorFor(result.error, 'scheduledAt');
      return { ok: false as const, message: field ?? result.error.message, ...(field && { field: 'date' }) };
    }
    await changed(`Moved “${excerpt(schedule.scheduledContent, 40)}” on ${schedule.integration.name} to ${formatDateTime(scheduledAt, '—', timeZone)}.`);
    return { ok: true as const };
  };

  const drop = async (day: string, hour?: number) => {
    const schedule = dragging.current;
    dragging.current = undefined;
    setDropTarget(undefined);
    if (!schedule?.scheduledAt) return;
    const time = timeOf(schedule.scheduledAt, timeZone);
    const at = instantAt(day, hour === undefined ? time : `${String(hour).padStart(2, '0')}:${time.slice(3)}`, timeZone);
    if (at === new Date(schedule.scheduledAt).toISOString()) return;
    setAnnouncement(`Moving “${excerpt(schedule.scheduledContent, 40)}”…`);
    const result = await move(schedule, at);
    if (!result.ok) {
      setAnnouncement('');
      setProblem(`“${excerpt(schedule.scheduledContent, 40)}” was not moved: ${result.message}`);
    }
  };

  const dropProps = (target: string, day: string, hour?: number) => ({
    'data-drop': target,
    class: dropTarget === target ? 'drop-target' : undefined,
    onDragOver: (event: DragEvent) => {
      if (!dragging.current) return;
      event.preventDefault();
      if (event.dataTransfer) event.dataTransfer.dropEffect = 'move';
      if (dropTarget !== target) setDropTarget(target);
    },
    onDragLeave: () => setDropTarget((current) => (current === target ? undefined : current)),
    onDrop: (event: DragEvent) => {
      if (!dragging.current) return;
      event.preventDefault();
      void drop(day, hour);
    },
  });

  const open = (schedule: CalendarSchedule) => {
    lastOpened.current = schedule;
    setStep('details');
    setOpenId(schedule.id);
  };
  const entryProps = {
    timeZone,
    onOpen: open,
    onDragStart: (schedule: CalendarSchedule) => {
      dragging.current = schedule;
    },
    onDragEnd: () => {
      dragging.current = undefined;
      setDropTarget(undefined);
    },
  };
  const returnFocus = () =>
    requestAnimationFrame(() => {
      // The entry moved to another day is another element now: the one with the same schedule.
      const id = lastOpened.current?.id;
      const entry = id && document.querySelector<HTMLElement>(`[data-schedule-id="${id}"] button`);
      (entry || document.getElementById('calendar-period'))?.focus();
    });

  const byDay = useMemo(() => {
    const days = new Map<string, CalendarSchedule[]>();
    for (const schedule of schedules) {
      if (!schedule.scheduledAt) continue;
      const day = dayOf(schedule.scheduledAt, timeZone);
      days.set(day, [...(days.get(day) ?? []), schedule]);
    }
    return days;
  }, [listing, timeZone]);

  const period =
    view === 'month'
      ? formatDayLong(startOfMonth(date), { month: 'long', year: 'numeric' })
      : view === 'week'
        ? `Week of ${formatDayLong(startOfWeek(date), { month: 'long', day: 'numeric', year: 'numeric' })}`
        : agendaPage?.for === agendaKey
          ? schedules.length
            ? `${formatDayLong(dayOf(schedules[0]!.scheduledAt!, timeZone), { month: 'short', day: 'numeric', year: 'numeric' })} to ${formatDayLong(dayOf(schedules.at(-1)!.scheduledAt!, timeZone), { month: 'short', day: 'numeric', year: 'numeric' })}`
            : 'Agenda'
          : `From ${formatDayLong(date, { month: 'long', day: 'numeric', year: 'numeric' })}`;
  const previous = view === 'month' ? addMonths(date, -1) : addDays(date, view === 'week' ? -7 : -1);
  const next = view === 'month' ? addMonths(date, 1) : addDays(date, view === 'week' ? 7 : 1);
  const unit = view === 'month' ? 'month' : view === 'week' ? 'week' : 'day';

  return (
    <>
      <div class="calendar-toolbar">
        <h2 id="calendar-period" tabIndex={-1} aria-busy={loading ? 'true' : undefined}>
          {period}
        </h2>
        <nav aria-label={`Calendar ${unit}s`} class="period-switch">
          <a href={calendarUrl(view, previous, filters)} onClick={followInApp} class="icon-link">
            <Icon icon={ChevronLeft} />
            <span class="visually-hidden">Previous {unit}</span>
          </a>
          <a href={calendarUrl(view, today, filters)} onClick={followInApp}>
            Today
          </a>
          <a href={calendarUrl(view, next, filters)} onClick={followInApp} class="icon-link">
            <Icon icon={ChevronRight} />
            <span class="visually-hidden">Next {unit}</span>
          </a>
        </nav>
        <nav aria-label="Calendar views" class="view-switch">
          <ul>
            {VIEWS.map((item) => (
              <li key={item.view}>
                <a href={calendarUrl(item.view, date, filters)} aria-current={item.view === view ? 'page' : undefined} onClick={followInApp}>
                  {item.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
      </div>
      <div class="calendar-meta">
        <p class="hint">
          Times are in the workspace’s time zone, {timeZone} ({zoneName(timeZone)}). The calendar updates itself every few seconds.
        </p>
        <StatusLegend />
      </div>
      <FilterPanel active={filters.platforms.length + filters.statuses.length}>
        <CalendarFilterForm filters={filters} onChange={(next) => navigate(calendarUrl(view, date, next))} />
      </FilterPanel>
      <p class="calendar-announcement" role="status">
        {announcement}
      </p>
      <ErrorMessage message={problem} />
      <ErrorMessage message={error?.message} />
      {!listing && !error && <Loading what="the schedules" />}
      {listing && view === 'month' && <MonthGrid date={date} today={today} byDay={byDay} entryProps={entryProps} dropProps={dropProps} />}
      {listing && view === 'week' && <WeekGrid date={date} today={today} byDay={byDay} entryProps={entryProps} dropProps={dropProps} />}
      {listing && view === 'agenda' && (
        <Agenda
          byDay={byDay}
          entryProps={entryProps}
          empty={schedules.length === 0}
          canEarlier={!(agendaPage?.for === agendaKey && agendaPage.direction === 'backward' && !listing.hasMore)}
          canLater={!(agendaPage?.for !== agendaKey || agendaPage.direction === 'forward') || listing.hasMore}
          onEarlier={() => {
            const first = schedules[0];
            setAgendaPage({ for: agendaKey, direction: 'backward', ...(first?.scheduledAt && { cursor: { scheduledAt: first.scheduledAt, id: first.id } }) });
            document.getElementById('calendar-period')?.focus();
          }}
          onLater={() => {
            const last = schedules.at(-1);
            setAgendaPage({ for: agendaKey, direction: 'forward', ...(last?.scheduledAt && { cursor: { scheduledAt: last.scheduledAt, id: last.id } }) });
            document.getElementById('calendar-period')?.focus();
          }}
        />
      )}
      {listing && view !== 'agenda' && schedules.length === 0 && <p>No schedules this {unit}{filterKey !== '|' && ' with these filters'}.</p>}
      {listing && view !== 'agenda' && listing.hasMore && <p class="hint">This {unit} has more schedules than the calendar shows; use the agenda.</p>}
      <ScheduleDialog
        schedule={opened}
        step={step}
        setStep={setStep}
        timeZone={timeZone}
        onClose={() => setOpenId(undefined)}
        onChanged={changed}
        move={move}
        returnFocus={returnFocus}
      />
    </>
  );
}

/** Which platforms and statuses to show; each change is a new address (back undoes it). */
function CalendarFilterForm({ filters, onChange }: { filters: CalendarFilters; onChange: (filters: CalendarFilters) => void }) {
  const toggle = <T,>(list: T[], value: T, on: boolean) => (on ? [...list.filter((item) => item !== value), value] : list.filter((item) => item !== value));
  return (
    <div class="calendar-filters">
      <p class="hint">None ticked shows them all.</p>
      <fieldset>
        <legend>Platforms</legend>
        {PLATFORMS.map((platform) => (
          <label key={platform} class="checkbox">
            <input
              type="checkbox"
              name="platforms"
              checked={filters.platforms.includes(platform)}
              onChange={(event) => onChange({ ...filters, platforms: toggle(filters.platforms, platform, event.currentTarget.checked) })}
            />
            {platformLabel(platform)}
          </label>
        ))}
      </fieldset>
      <fieldset>
        <legend>Statuses</legend>
        {STATUSES.map((status) => (
          <label key={status} class="checkbox">
            <input
              type="checkbox"
              name="statuses"
              checked={filters.statuses.includes(status)}
              onChange={(event) => onChange({ ...filters, statuses: toggle(filters.statuses, status, event.currentTarget.checked) })}
            />
            {STATUS_LABELS[status]}
          </label>
        ))}
      </fieldset>
    </div>
  );
}

type EntryProps = Omit<Parameters<typeof Entry>[0], 'schedule'>;
type DropProps = (target: string, day: string, hour?: number) => Record<string, unknown>;

interface GridProps {
  date: string;
  today: string;
  byDay: Map<string, CalendarSchedule[]>;
  entryProps: EntryProps;
  dropProps: DropProps;
}

/** A day's entries, in time order. */
function Entries({ schedules, entryProps, detailed }: { schedules: CalendarSchedule[] | undefined; entryProps: EntryProps; detailed?: boolean }) {
  if (!schedules?.length) return null;
  return (
    <ul class="entries">
      {schedules.map((schedule) => (
        <Entry key={schedule.id} schedule={schedule} detailed={detailed} {...entryProps} />
      ))}
    </ul>
  );
}

const WEEKDAYS = Array.from({ length: 7 }, (_, index) => addDays('2026-11-23', index)); // a Monday

function MonthGrid({ date, today, byDay, entryProps, dropProps }: GridProps) {
  const month = date.slice(0, 7);
  const first = startOfWeek(startOfMonth(date));
  const last = addDays(startOfMonth(addMonths(date, 1)), -1);
  const days: string[] = [];
  for (let day = first; day <= last || days.length % 7 !== 0; day = addDays(day, 1)) days.push(day);
  return (
    <div class="month-grid">
      {WEEKDAYS.map((day) => (
        <div key={day} class="weekday-name" aria-hidden="true">
          {formatDayLong(day, { weekday: 'short' })}
        </div>
      ))}
      {days.map((day) => {
        const drop = dropProps(`day:${day}`, day) as { class?: string };
        const entries = byDay.get(day);
        return (
          <section
            key={day}
            aria-label={formatDayLong(day)}
            data-day={day}
            {...drop}
            class={['month-day', day.slice(0, 7) !== month && 'outside', day === today && 'today', !entries?.length && 'empty', drop.class]
              .filter(Boolean)
              .join(' ')}
          >
            <p class="day-number" aria-hidden="true">
              <span class="day-short">{Number(day.slice(8))}</span>
              <span class="day-long">{formatDayLong(day, { weekday: 'long', month: 'long', day: 'numeric' })}</span>
            </p>
            {day === today && <p class="visually-hidden">Today</p>}
            <Entries schedules={entries} entryProps={entryProps} />
          </section>
        );
      })}
    </div>
  );
}

function WeekGrid({ date, today, byDay, entryProps, dropProps }: GridProps) {
  const monday = startOfWeek(date);
  const days = Array.from({ length: 7 }, (_, index) => addDays(monday, index));
  const timeZone = entryProps.timeZone;
  return (
    <div class="week-grid">
      <div class="week-hours" aria-hidden="true">
        <div class="week-corner" />
        {HOURS.map((hour) => (
          <div key={hour} class="hour-label">
            {formatHour(hour)}
          </div>
        ))}
      </div>
      {days.map((day) => {
        const entries = byDay.get(day) ?? [];
        return (
          <section key={day} aria-label={formatDayLong(day)} data-day={day} class={['week-day', day === today && 'today', !entries.length && 'empty'].filter(Boolean).join(' ')}>
            <p class="week-day-name" aria-hidden="true">
              {formatDayLong(day, { weekday: 'short', month: 'short', day: 'numeric' })}
            </p>
            {HOURS.map((hour) => {
              const inHour = entries.filter((schedule) => Number(timeOf(schedule.scheduledAt!, timeZone).slice(0, 2)) === hour);
              const drop = dropProps(`slot:${day}:${hour}`, day, hour) as { class?: string };
              return (
                <div key={hour} data-hour={hour} {...drop} class={['week-slot', !inHour.length && 'empty', drop.class].filter(Boolean).join(' ')}>
                  <Entries schedules={inHour} entryProps={entryProps} />
                </div>
              );
            })}
          </section>
        );
      })}
    </div>
  );
}

interface AgendaProps {
  byDay: Map<string, CalendarSchedule[]>;
  entryProps: EntryProps;
  empty: boolean;
  canEarlier: boolean;
  canLater: boolean;
  onEarlier: () => void;
  onLater: () => void;
}

function Agenda({ byDay, entryProps, empty, canEarlier, canLater, onEarlier, onLater }: AgendaProps) {
  const days = [...byDay.keys()].sort();
  return (
    <div class="agenda">
      <button type="button" onClick={onEarlier} disabled={!canEarlier}>
        Earlier schedules
      </button>
      {empty && <p>No schedules here.</p>}
      {days.map((day) => (
        <section key={day} aria-labelledby={`agenda-${day}`} class="agenda-day" data-day={day}>
          <h3 id={`agenda-${day}`}>{formatDayLong(day)}</h3>
          <Entries schedules={byDay.get(day)} entryProps={entryProps} detailed />
        </section>
      ))}
      <button type="button" onClick={onLater} disabled={!canLater}>
        Later schedules
      </button>
    </div>
  );
}
