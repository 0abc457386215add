import type { AppContext } from '../../src/platform/context.js';
import { LocalRuntime } from '../../src/platform/runtime/local/local-runtime.js';

/** The context's runtime as the local one (router, instances): tests of local deployments look inside it. */
export function localRuntime(ctx: AppContext): LocalRuntime {
  if (!(ctx.runtime instanceof LocalRuntime)) throw new Error('this test needs the local runtime (a harness with `runtime: true`)');
  return ctx.runtime;
}
