import { describe, expect, it } from 'vitest';
import { zonedToIso } from '../src/dashboard/zoned-time.js';

// The composer and the calendar read a date and time in the workspace's zone as the server reads posting windows.
describe('a wall-clock time in a zone, as the dashboard reads it', () => {
  it('moves a time the spring-forward skips forward by the gap, east and west of UTC', () => {
    expect(zonedToIso('2027-03-28', '02:30', 'Europe/Paris')).toBe('2027-03-28T01:30:00.000Z'); // 03:30 CEST
    expect(zonedToIso('2027-03-14', '02:30', 'America/New_York')).toBe('2027-03-14T07:30:00.000Z'); // 03:30 EDT
    expect(zonedToIso('2026-09-06', '00:30', 'America/Santiago')).toBe('2026-09-06T04:30:00.000Z'); // 01:30, the same day
  });

  it('takes the later of a time the fall-back repeats, and reads ordinary times as they are', () => {
    expect(zonedToIso('2027-10-31', '02:30', 'Europe/Paris')).toBe('2027-10-31T01:30:00.000Z'); // 02:30 CET
    expect(zonedToIso('2027-11-07', '01:30', 'America/New_York')).toBe('2027-11-07T06:30:00.000Z'); // 01:30 EST
    expect(zonedToIso('2027-01-15', '10:30', 'Europe/Paris')).toBe('2027-01-15T09:30:00.000Z');
    expect(zonedToIso('2027-07-01', '23:59', 'Pacific/Kiritimati')).toBe('2027-07-01T09:59:00.000Z');
    expect(zonedToIso('2027-07-01', '9:30', 'UTC')).toBeNull();
  });
});
