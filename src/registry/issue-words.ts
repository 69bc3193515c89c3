import type { z } from 'zod';

/** zod's own English messages start so; a message a schema wrote itself ("must be in the future") is kept as it is. */
const ZOD_DEFAULT = /^(Too small|Too big|Invalid (input|option|email|URL|UUID|ISO|string|date|datetime|number|key))/;

const KINDS: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'a list',
  object: 'an object',
  date: 'a date',
};

const FORMATS: Record<string, string> = {
  email: 'an email address',
  url: 'a web address (https://…)',
  uuid: 'an id (a UUID)',
  datetime: 'a date and time such as 2026-12-01T09:00:00Z',
  date: 'a day such as 2026-12-01',
  time: 'a time such as 09:00',
};

const plural = (n: number, one: string, many: string) => (n === 1 ? `1 ${one}` : `${n} ${many}`);

/**
 * A validation issue in words ("must be at least 12 characters"), for the message's part after its field: zod's
 * defaults ("Too small: expected string to have >=12 characters") read like code.
 */
export function issueInWords(issue: z.core.$ZodIssue): string {
  if (!ZOD_DEFAULT.test(issue.message)) return issue.message;
  switch (issue.code) {
    case 'too_small': {
      const n = Number(issue.minimum);
      if (issue.origin === 'string') return n <= 1 ? 'must not be empty' : `must be at least ${plural(n, 'character', 'characters')}`;
      if (issue.origin === 'array' || issue.origin === 'set') return n <= 1 ? 'must have at least one item' : `must have at least ${plural(n, 'item', 'items')}`;
      return issue.inclusive === false ? `must be more than ${n}` : `must be at least ${n}`;
    }
    case 'too_big': {
      const n = Number(issue.maximum);
      if (issue.origin === 'string') return `must be at most ${plural(n, 'character', 'characters')}`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${plural(n, 'item', 'items')}`;
      return issue.inclusive === false ? `must be less than ${n}` : `must be at most ${n}`;
    }
    case 'invalid_format':
      return FORMATS[issue.format] ? `must be ${FORMATS[issue.format]}` : issue.message;
    case 'invalid_type': {
      const received = /received (\w+)$/.exec(issue.message)?.[1];
      if (received === 'undefined') return 'is required';
      if (!KINDS[issue.expected]) return issue.message;
      // 1.5 where a whole number is wanted is a number all the same: only what it must be is said.
      if (issue.expected === 'int' && received === 'number') return `must be ${KINDS.int}`;
      const got = received === 'null' ? 'null' : received && KINDS[received];
      return `must be ${KINDS[issue.expected]}${got ? `, not ${got}` : ''}`;
    }
    case 'invalid_value':
      return issue.values.length === 1 ? `must be ${JSON.stringify(issue.values[0])}` : `must be one of ${issue.values.map((value) => JSON.stringify(value)).join(', ')}`;
    default:
      return issue.message;
  }
}
