import { Counter } from 'prom-client';

/**
 * Passwords this process checked at sign-in, by outcome: what the login limits bound (a burst of
 * attempts gets at most the allowance; the rest are refused before any check). The metrics module
 * registers it.
 */
export const loginPasswordChecks = new Counter({
  name: 'slipway_login_password_checks_total',
  help: 'Passwords checked at sign-in by this process (attempts refused by the login limits are not checked), by outcome',
  labelNames: ['outcome'],
  registers: [],
});
