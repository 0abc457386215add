import cronParser from 'cron-parser';

/**
 * Cron schedules, read by `cron-parser` (pinned; the version pg-boss uses too), always in
 * UTC. Five fields (minute hour day month weekday) or a macro such as `@hourly`; a sixth,
 * leading seconds field only where the operator allows it (CRON_SECONDS_FIELD, for tests).
 */
export class CronScheduleError extends Error {}

export function parseSchedule(schedule: string, allowSeconds: boolean) {
  const fields = schedule.trim().split(/\s+/);
  const macro = fields.length === 1 && fields[0]!.startsWith('@');
  if (!macro && fields.length !== 5 && !(allowSeconds && fields.length === 6)) {
    throw new CronScheduleError(
      allowSeconds
        ? 'expected 5 fields (minute hour day-of-month month day-of-week), 6 with seconds first, or a macro such as @hourly'
        : 'expected 5 fields (minute hour day-of-month month day-of-week) or a macro such as @hourly',
    );
  }
  try {
    return cronParser.parseExpression(schedule, { utc: true });
  } catch (err) {
    throw new CronScheduleError(err instanceof Error ? err.message : String(err));
  }
}

/** The schedule's first occurrence strictly after `after`. */
export function nextOccurrence(schedule: string, after: Date, allowSeconds: boolean): Date {
  parseSchedule(schedule, allowSeconds);
  return cronParser.parseExpression(schedule, { utc: true, currentDate: after }).next().toDate();
}
