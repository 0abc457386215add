/** A start that cannot go on for a reason the operator must fix: printed as one line, without a stack. */
export class StartupError extends Error {}
