/** A setting that is missing or invalid: the process says which and does not start (apart from config.ts, which loads TypeBox). */
export class ConfigError extends Error {}
