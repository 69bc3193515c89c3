import { mkdir, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import { createAccountLink, firstRunSetupLink } from '../../src/auth/sessions.js';
import { chromiumExecutable } from './chromium.js';
import type { TestService, Workspace } from './service.js';

/**
 * The dashboard's tests drive a real Chromium: the one inside `@sparticuz/chromium`, unpacked once per run (by the
 * first test file that launches it; see test/support/chromium.ts), launched with playwright-core. One browser per test
 * file (launch it in beforeAll), a context of its own per test (its own cookies): `newPage`, `newContext`.
 */

/**
 * The package's own `chromium.args` are meant for AWS Lambda (`--single-process` among them, which Playwright cannot
 * drive); these are the ones a headless test on a machine with loopback only needs.
 */
const ARGS = [
  '--no-sandbox', // the suite runs as root too; the pages are our own
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-dev-shm-usage', // containers' /dev/shm is small
  '--font-render-hinting=none', // screenshots alike from one machine to another
];

/** Chromium, headless: the run's unpacked binary (unpacked now if no test file of the run has done it yet). */
export async function launchBrowser(): Promise<Browser> {
  const { executable, fontConfig } = await chromiumExecutable(inject('chromiumDir'));
  return chromium.launch({
    executablePath: executable,
    headless: true,
    args: ARGS,
    env: { ...process.env, FONTCONFIG_FILE: fontConfig },
    timeout: 60_000,
  });
}

export const DESKTOP = { width: 1280, height: 800 } as const;
/** A small phone's width, where the pages must still be readable and usable. */
export const PHONE = { width: 390, height: 844 } as const;

export interface PageOptions {
  /** `desktop` (1280 x 800, the default) or `phone` (390 x 844, touch, a mobile viewport). */
  size?: 'desktop' | 'phone';
  /** Relative URLs given to page.goto are resolved against it (the service's base). */
  baseURL?: string;
  /** The browser's time zone (UTC unless given). */
  timeZone?: string;
  /** The browser's language (`en-US` unless given): its clock, 12 or 24 hours, and its date order. */
  locale?: string;
}

/**
 * A page in a context of its own (closing the page closes the context). Its actions wait 10 s at most, so a missing
 * label fails with Playwright's message before the test's own timeout; uncaught errors and console errors (CSP
 * violations among them) are kept for `pageErrors`.
 */
export async function newPage(browser: Browser, { size = 'desktop', baseURL, timeZone = 'UTC', locale = 'en-US' }: PageOptions = {}): Promise<Page> {
  const page = await browser.newPage({
    baseURL,
    ...(size === 'phone' ? { viewport: PHONE, isMobile: true, hasTouch: true, deviceScaleFactor: 2 } : { viewport: DESKTOP }),
    locale,
    timezoneId: timeZone,
    reducedMotion: 'reduce',
  });
  watch(page);
  return page;
}

/** A second context on the same browser (another person's cookies), desktop-sized: for invitations and the like. */
export async function newContext(browser: Browser, { baseURL }: { baseURL?: string } = {}): Promise<BrowserContext> {
  const context = await browser.newContext({ baseURL, viewport: DESKTOP, locale: 'en-US', timezoneId: 'UTC', reducedMotion: 'reduce' });
  context.setDefaultTimeout(10_000);
  context.on('page', watch);
  return context;
}

const errors = new WeakMap<Page, string[]>();

function watch(page: Page) {
  page.setDefaultTimeout(10_000);
  const seen: string[] = [];
  errors.set(page, seen);
  page.on('pageerror', (error) => seen.push(`uncaught: ${error.message}`));
  page.on('console', (message) => {
    // An answer of 4xx is how the API says no (an expired session's 401...), and the pages handle it; Chromium logs
    // each one as "Failed to load resource", which is not an error of the page.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) seen.push(`console: ${message.text()}`);
  });
}

/** The page's uncaught errors and console errors (a refused inline script, a CSP violation...) so far. */
export function pageErrors(page: Page): string[] {
  return [...(errors.get(page) ?? [])];
}

let axeSource: Promise<string> | undefined;

/** The tags of WCAG 2.0, 2.1 and 2.2, levels A and AA, as axe-core names them. */
const WCAG_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa'];

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  helpUrl: string;
  nodes: { target: unknown[]; failureSummary?: string }[];
}

/**
 * Runs axe-core on the page as it is now, with the rules of WCAG 2 A and AA, and fails with the list of serious or
 * critical violations (each rule, then every element it failed on and why). axe's source is evaluated in the page
 * through the DevTools protocol rather than added as an inline `<script>`, which the dashboard's Content-Security-Policy
 * (rightly) refuses.
 */
export async function checkAccessibility(page: Page, label: string): Promise<void> {
  axeSource ??= readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  const source = await axeSource;
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(source);
  const violations = await page.evaluate(async (tags) => {
    const axe = (window as unknown as { axe: { run(context: unknown, options: unknown): Promise<{ violations: AxeViolation[] }> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
    return result.violations.map(({ id, impact, help, helpUrl, nodes }) => ({
      id,
      impact,
      help,
      helpUrl,
      nodes: nodes.map(({ target, failureSummary }) => ({ target, failureSummary })),
    }));
  }, WCAG_TAGS);
  const serious = violations.filter((violation) => violation.impact === 'serious' || violation.impact === 'critical');
  if (serious.length === 0) return;
  const report = serious
    .map(
      (violation) =>
        `- [${violation.impact}] ${violation.id}: ${violation.help} (${violation.helpUrl})\n` +
        violation.nodes
          .map((node) => `    ${JSON.stringify(node.target)}\n      ${(node.failureSummary ?? '').replace(/\n/g, '\n      ')}`)
          .join('\n'),
    )
    .join('\n');
  throw new Error(`Accessibility of ${label} (${page.url()}): ${serious.length} serious or critical violation(s) of WCAG 2 A/AA\n${report}`);
}

/** Where screenshots go: test-artifacts/screenshots/ at the project's root (ignored by git). */
export const SCREENSHOTS = fileURLToPath(new URL('../../test-artifacts/screenshots/', import.meta.url));

/** A full-page PNG of the page as it is now, as test-artifacts/screenshots/<name>.png; answers its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(SCREENSHOTS, { recursive: true });
  const path = `${SCREENSHOTS}${name.replace(/[^\w.-]+/g, '-')}.png`;
  await page.screenshot({ path, fullPage: true, animations: 'disabled' });
  return path;
}

/**
 * The focused element (inside shadow roots too), its role and a quick reckoning of its accessible name (aria-label,
 * aria-labelledby, its labels, its text, title, placeholder), in one round trip: enough to follow the focus.
 */
function quickFocus(page: Page): Promise<{ role: string; name: string } | null> {
  return page.evaluate(() => {
    let element = document.activeElement;
    while (element?.shadowRoot?.activeElement) element = element.shadowRoot.activeElement;
    if (!element || element === document.body || element === document.documentElement) return null;
    // The text of a node, without what is hidden from assistive technology (aria-hidden="true", hidden).
    const visible = (node: Node): string =>
      node.nodeType === Node.TEXT_NODE
        ? (node.textContent ?? '')
        : node instanceof Element && (node.getAttribute('aria-hidden') === 'true' || node.hasAttribute('hidden'))
          ? ''
          : [...node.childNodes].map(visible).join('');
    const text = (node: Element | null | undefined) => (node ? visible(node) : '').replace(/\s+/g, ' ').trim();
    const labelledBy = element.getAttribute('aria-labelledby');
    const labels = 'labels' in element ? [...((element as HTMLInputElement).labels ?? [])] : [];
    const name =
      element.getAttribute('aria-label') ??
      (labelledBy ? labelledBy.split(/\s+/).map((id) => text(document.getElementById(id))).join(' ') : null) ??
      (labels.length ? labels.map((label) => text(label)).join(' ') : null) ??
      (element.matches('input, select, textarea') ? null : text(element) || null) ??
      element.getAttribute('title') ??
      element.getAttribute('placeholder') ??
      '';
    return { role: element.getAttribute('role') ?? element.tagName.toLowerCase(), name: name.trim() };
  });
}

/** The focused element's role and accessible name, as the accessibility tree has them (`button "Create key"`). */
async function focused(page: Page): Promise<{ role: string; name: string } | null> {
  const snapshot = await page
    .locator('*:focus')
    .first()
    .ariaSnapshot({ depth: 0, timeout: 2000 })
    .catch(() => '');
  // `- button "Create key"`, `- textbox "Email": value`, `- link "Usage":`...
  const match = /^-\s+([\w-]+)(?:\s+"((?:[^"\\]|\\.)*)")?/.exec(snapshot.trim());
  // Playwright's name of a <summary> starts with its disclosure marker (`▸ `), which is no part of its text.
  return match ? { role: match[1]!, name: (match[2] ?? '').replace(/\\(.)/g, '$1').replace(/^[▸▾▶▼►]\s*/u, '') } : null;
}

/**
 * Presses Tab (or Shift+Tab, `backwards`) until the focused element is `target`: a Locator, or an accessible name
 * (a string matches the whole name, case-insensitively; or a RegExp). It presses at least once (a radio named "Publish
 * now" can have the focus when the target is the button after it of the same name). Answers the number of presses.
 *
 * It waits for states, never for a moment or a number of presses: a Locator target first for it to be visible and
 * enabled (a control not rendered yet, or disabled, cannot take the focus however often Tab is pressed); a name is
 * matched against what the focus reaches, so a caller whose target comes after the page's data waits for it first
 * (its heading, the field, the dialog open). After each press it waits for the focus to have moved before reading
 * where it is. `maxTabs` is a safety bound, not an expectation (a dialog's test may pass a small one to say its
 * controls are that close): past it, or when a press does not move the focus, it fails with the focus's path, so a
 * test shows where the keyboard went instead.
 */
export async function tabTo(
  page: Page,
  target: Locator | string | RegExp,
  { maxTabs = 100, backwards = false }: { maxTabs?: number; backwards?: boolean } = {},
): Promise<number> {
  const path: string[] = [];
  const named = (name: string) =>
    typeof target === 'string' ? name.toLowerCase() === target.trim().toLowerCase() : target instanceof RegExp && target.test(name);
  const described = typeof target === 'string' || target instanceof RegExp ? `"${String(target)}"` : String(target);
  if (typeof target !== 'string' && !(target instanceof RegExp)) await waitUntilFocusable(target);
  const matches = async () => {
    const now = await quickFocus(page);
    path.push(now ? `${now.role} "${now.name}"` : '(nothing)');
    if (!now) return false;
    if (typeof target === 'string' || target instanceof RegExp) {
      if (!named(now.name)) return false;
      // Confirmed by the accessible name the browser computes, when the accessibility tree gives one (a <summary>
      // has none of its own there): the quick one only finds the candidate.
      const exact = await focused(page);
      if (!exact?.name || named(exact.name)) return true;
      path.push(`(its accessible name is ${exact ? `${exact.role} "${exact.name}"` : 'unknown'})`);
      return false;
    }
    return target.evaluate((element) => {
      let active = document.activeElement;
      while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
      return element === active;
    });
  };
  for (let presses = 1; presses <= maxTabs; presses++) {
    await pressMovingFocus(page, backwards ? 'Shift+Tab' : 'Tab', () => `Tab did not reach ${described}: the focus went ${path.join(' -> ')}`);
    if (await matches()) return presses;
  }
  throw new Error(`Tab did not reach ${described} in ${maxTabs} presses; the focus went: ${path.join(' -> ')}`);
}

/**
 * Presses `key` (Tab, Shift+Tab...) and waits for the focus to leave the element that had it: the state the next step
 * reads, rather than reading it at once. In a date or time field Tab moves between its parts (day, month, year) inside
 * the one element, so there the press is taken as done once it is answered. Fails (with `explain()`) if the focus has
 * not moved within `timeout`: a press that should move the focus and does not is what the test is there to find.
 */
export async function pressMovingFocus(page: Page, key: string, explain = () => `${key} did not move the focus`, timeout = 10_000): Promise<void> {
  await page.evaluate(() => {
    let active = document.activeElement;
    while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
    (window as unknown as { focusBeforePress: Element | null }).focusBeforePress = active;
  });
  await page.keyboard.press(key);
  await page
    .waitForFunction(
      () => {
        let active = document.activeElement;
        while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
        const before = (window as unknown as { focusBeforePress: Element | null }).focusBeforePress;
        const withParts = active instanceof HTMLInputElement && ['date', 'time', 'datetime-local', 'month', 'week'].includes(active.type);
        return active !== before || withParts;
      },
      undefined,
      { timeout },
    )
    .catch((error: unknown) => {
      throw new Error(`${explain()} (${key} left the focus where it was for ${timeout} ms)`, { cause: error });
    });
}

/** Waits until `target` is visible and enabled: what it takes for Tab to be able to reach it. */
export async function waitUntilFocusable(target: Locator, timeout = 10_000): Promise<void> {
  await target.waitFor({ state: 'visible', timeout });
  await expect.poll(() => target.isEnabled(), { timeout, message: `${String(target)} is visible but stays disabled` }).toBe(true);
}

/** Whether the focus is now on `target` (or inside it). A snapshot: to wait for the focus to get there, `waitForFocus`. */
export async function hasFocus(target: Locator): Promise<boolean> {
  return target.evaluate((element) => {
    let active = document.activeElement;
    while (active?.shadowRoot?.activeElement) active = active.shadowRoot.activeElement;
    return element === active || element.contains(active);
  });
}

/**
 * Waits until the focus is on `target` (or inside it): where a page moves the focus after an event (a dialog opened,
 * closed, a row removed), it does so in an effect or the dialog's `close` event, a moment after the change shows, so a
 * test reads it only once it holds. Fails after `timeout` saying where the focus is instead.
 */
export async function waitForFocus(target: Locator, timeout = 10_000): Promise<void> {
  const page = target.page();
  const deadline = Date.now() + timeout;
  while (!(await hasFocus(target))) {
    if (Date.now() > deadline) {
      const now = await quickFocus(page);
      throw new Error(`The focus did not reach ${String(target)} within ${timeout} ms; it is on ${now ? `${now.role} "${now.name}"` : '(nothing)'}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * A one-time link to set a password, as a person receives it. Without `ws`: the first-run link the start-up banner
 * prints (the workspace's owner, while no member has a password). With `ws`: a link for that workspace's owner,
 * whatever the other members have.
 */
export async function setupLink(service: TestService, ws?: Workspace): Promise<string> {
  const db = service.service.core.db;
  if (!ws) {
    const link = await firstRunSetupLink(db, service.base);
    if (!link) throw new Error('No first-run setup link: a member has a password already');
    return link;
  }
  const [owner] = await db<{ email: string }[]>`SELECT email FROM users WHERE id = ${ws.userId}`;
  return (await createAccountLink(db, service.base, { purpose: 'setup', workspaceId: ws.workspaceId, userId: ws.userId, email: owner!.email })).url;
}

/** The owner's email and a password for them, set through a setup link as the setup page does. */
export async function setOwnerPassword(service: TestService, ws: Workspace, password = 'correct horse battery staple'): Promise<{ email: string; password: string }> {
  const token = new URL(await setupLink(service, ws)).searchParams.get('token');
  const answer = await fetch(`${service.base}/auth/setup`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ token, password }),
  });
  if (!answer.ok) throw new Error(`POST /auth/setup: ${answer.status} ${await answer.text()}`);
  const { user } = (await answer.json()) as { user: { email: string } };
  return { email: user.email, password };
}

/** Signs the page's context in through the API (its cookie then goes with every page of the context). */
export async function signIn(page: Page, base: string, { email, password }: { email: string; password: string }): Promise<void> {
  const answer = await page.request.post(`${base}/auth/login`, { data: { email, password } });
  if (!answer.ok()) throw new Error(`POST /auth/login: ${answer.status()} ${await answer.text()}`);
}

/**
 * A new page signed in as the workspace's owner, for the tests whose subject comes after sign-in (sign-in itself is
 * tested through its page). Relative URLs are the service's.
 */
export async function signedInOwner(browser: Browser, service: TestService, ws: Workspace, options: Omit<PageOptions, 'baseURL'> = {}) {
  const credentials = await setOwnerPassword(service, ws);
  const page = await newPage(browser, { ...options, baseURL: service.base });
  await signIn(page, service.base, credentials);
  return { page, ...credentials };
}

/** The value of the page's session cookie (to call with it from outside the browser), or undefined. */
export async function sessionCookie(page: Page): Promise<string | undefined> {
  return (await page.context().cookies()).find((cookie) => cookie.name === 'postwise_session')?.value;
}

/** Opens the calendar at a view and a day, once its schedules are shown. */
export async function openCalendar(page: Page, view: string, date: string) {
  await page.goto(`/calendar?view=${view}&date=${date}`);
  await page.getByRole('heading', { name: 'Calendar', level: 1 }).waitFor();
  await page.locator('progress').first().waitFor({ state: 'detached' });
}

/**
 * Drags `source` onto `target` with the mouse, as a person does: both scrolled into view first (Playwright's dragTo
 * scrolls the target into view with the button already down, which moves the page under the pointer).
 */
export async function dragTo(page: Page, source: Locator, target: Locator) {
  await source.scrollIntoViewIfNeeded();
  let to = (await target.boundingBox())!;
  const viewport = page.viewportSize()!;
  if (to.y + Math.min(to.height, 40) > viewport.height) {
    await page.mouse.wheel(0, to.y + 40 - viewport.height);
    await expect.poll(async () => (await target.boundingBox())!.y).toBeLessThan(to.y);
  }
  const start = (await source.boundingBox())!;
  to = (await target.boundingBox())!;
  await page.mouse.move(start.x + start.width / 2, start.y + Math.min(start.height / 2, 20));
  await page.mouse.down();
  await page.mouse.move(to.x + to.width / 2, to.y + Math.min(to.height / 2, 20), { steps: 8 });
  await page.mouse.up();
}

/**
 * Words the page shows split across two lines ("Revok/e"), each with where it is: every visible text, word by word
 * (a word may end with a hyphen, where a line may break). Addresses (`code.url`) break only between their parts,
 * which are separate text nodes, so they are measured part by part too.
 */
export async function brokenWords(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const parent = node.parentElement;
      if (!parent || parent.closest('.visually-hidden, script, style, option, select, textarea, [hidden], dialog:not([open])')) continue;
      const text = node.textContent ?? '';
      for (const match of text.matchAll(/[^\s-]+-?/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const lines = new Set([...range.getClientRects()].filter((rect) => rect.width > 0).map((rect) => Math.round(rect.top)));
        if (lines.size > 1) found.push(`"${match[0]}" in <${parent.tagName.toLowerCase()} class="${parent.className}">`);
      }
    }
    return found;
  });
}

/** The page's labels (navigation, buttons, table headings, badges, tags) that take more than one line; a calendar entry is a card, not a label. */
export async function labelsOnTwoLines(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    for (const element of document.querySelectorAll<HTMLElement>('nav a, button:not(.entry-button), thead th, .badge, .tag, .status-badge')) {
      if (element.closest('.visually-hidden, [hidden], dialog:not([open])') || !element.getClientRects().length) continue;
      // The lines its words sit on (text only: an icon beside them sits a little lower), told apart by 8 px or more.
      const tops: number[] = [];
      const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (!node.textContent?.trim() || node.parentElement?.closest('.visually-hidden')) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        for (const rect of range.getClientRects()) if (rect.width > 1) tops.push(rect.top);
      }
      tops.sort((a, b) => a - b);
      const lines = tops.filter((top, index) => index === 0 || top - tops[index - 1]! >= 8).length;
      if (lines > 1) found.push(`${element.tagName.toLowerCase()} "${element.innerText.trim()}"`);
    }
    return found;
  });
}
