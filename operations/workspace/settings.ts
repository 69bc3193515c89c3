import { z } from 'zod';
import { languageTags } from '../../src/platforms/languages.js';
import { text, uuid } from '../../src/registry/fields.js';
import { defineOperation } from '../../src/registry/operation.js';

const timeZone = z
  .string()
  .refine((name) => {
    try {
      new Intl.DateTimeFormat('en', { timeZone: name });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone, such as Europe/Paris or America/New_York')
  .meta({ description: 'The IANA time zone posting windows and calendar dates are read in.' });

export const PostingWindow = z.strictObject({
  weekdays: z.array(z.number().int().min(1).max(7)).min(1).max(7).meta({ description: 'ISO weekdays: 1 is Monday, 7 is Sunday.' }),
  times: z
    .array(z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a local time HH:MM, 00:00 to 23:59'))
    .min(1)
    .max(48),
});

const languages = languageTags.meta({
  description:
    'The languages (BCP-47 tags, at most 3) a Bluesky post carries when its schedule\'s settings.langs names none. With none ' +
    '([], the default), such a post carries the language detected from its text, when the detection is confident.',
});

const postsNeedApproval = z.boolean().meta({
  description:
    'Every live post of the workspace waits for approval before it publishes (approvalStatus pending_review), whoever writes it. ' +
    'Posts already waiting stay waiting when it is turned off. An API key can require approval on its own (postsNeedApproval on the key).',
});

const approverIds = z
  .array(uuid)
  .max(50)
  .meta({ description: 'The members who may approve posts (user ids); none (the default): the workspace\'s owners. Owners may always approve.' });

export const Settings = z
  .object({
    name: z.string(),
    timeZone: z.string(),
    postingWindows: z.array(PostingWindow),
    languages: z.array(z.string()),
    postsNeedApproval,
    approverIds: z.array(uuid),
  })
  .meta({ id: 'WorkspaceSettings' });

/** The settings columns, as `Settings` reads them (the windows as text: postgres.camel would rewrite keys inside JSON). */
export const SETTINGS_COLUMNS = 'name, time_zone, posting_windows::text AS posting_windows_text, languages, posts_need_approval, approver_ids';

export interface SettingsRow {
  name: string;
  timeZone: string;
  postingWindowsText: string;
  languages: string[];
  postsNeedApproval: boolean;
  approverIds: string[];
}

export const toSettings = (row: SettingsRow): z.input<typeof Settings> => ({
  name: row.name,
  timeZone: row.timeZone,
  postingWindows: JSON.parse(row.postingWindowsText),
  languages: row.languages,
  postsNeedApproval: row.postsNeedApproval,
  approverIds: row.approverIds,
});

export default defineOperation({
  id: 'updateWorkspaceSettings',
  method: 'PATCH',
  ownerOnly: true,
  path: '/workspace/settings',
  summary: 'Set the workspace\'s name, time zone, posting windows, default languages and approval rule',
  description:
    'The workspace\'s name; the time zone (IANA; UTC until set) in which NEXT_WINDOW reads the posting windows and the calendar reads dates, the ' +
    'posting windows themselves: groups of ISO weekdays and local HH:MM times (by default Monday to Friday at 09:00, 12:00 and 17:00), ' +
    'the default languages of Bluesky posts (none until set), and whether live posts wait for approval and who approves them. ' +
    'Any may be left out. Answers the settings as they now are. ' +
    'The owner\'s to change. Internal (dashboard, admin command).',
  input: {
    body: z.strictObject({
      name: text.trim().min(1).max(100).optional().meta({ description: 'The workspace\'s name, as members see it.' }),
      timeZone: timeZone.optional(),
      postingWindows: z.array(PostingWindow).min(1).max(7).optional(),
      languages: languages.optional(),
      postsNeedApproval: postsNeedApproval.optional(),
      approverIds: approverIds.optional(),
    }),
  },
  output: Settings,
  errors: ['VALIDATION_ERROR'],
  async handler({ name, timeZone, postingWindows, languages, postsNeedApproval, approverIds }, { db, auth, fail }) {
    // Postgres converts the windows' wall-clock times, so it must know the zone too (its list can trail Intl's).
    if (timeZone && !(await db`SELECT 1 FROM pg_timezone_names WHERE name = ${timeZone}`).length) {
      return fail('VALIDATION_ERROR', `body.timeZone: ${timeZone} is not a time zone this database knows`);
    }
    if (approverIds?.length) {
      const members = await db<{ userId: string }[]>`
        SELECT user_id FROM memberships WHERE organization_id = ${auth.workspaceId} AND user_id = ANY(${approverIds}::uuid[])`;
      const stranger = approverIds.findIndex((id) => !members.some((member) => member.userId === id));
      if (stranger >= 0) return fail('VALIDATION_ERROR', `body.approverIds[${stranger}]: ${approverIds[stranger]} is not a member of this workspace`);
    }
    const [settings] = await db<SettingsRow[]>`
      UPDATE organizations SET name = coalesce(${name ?? null}, name), time_zone = coalesce(${timeZone ?? null}, time_zone),
        posting_windows = coalesce(${postingWindows ? db.json(postingWindows) : null}::jsonb, posting_windows),
        languages = coalesce(${languages ?? null}::text[], languages),
        posts_need_approval = coalesce(${postsNeedApproval ?? null}::boolean, posts_need_approval),
        approver_ids = coalesce(${approverIds ? [...new Set(approverIds)] : null}::uuid[], approver_ids), updated_at = now()
      WHERE id = ${auth.workspaceId}
      RETURNING ${db.unsafe(SETTINGS_COLUMNS)}`;
    return toSettings(settings!);
  },
});
