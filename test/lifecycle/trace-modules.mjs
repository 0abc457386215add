// Preloaded with `--import`: records every module URL the process (and a child started with its execArgv) resolves into TRACE_MODULES_FILE.
import { register } from 'node:module';

register('./trace-modules-hooks.mjs', import.meta.url);
