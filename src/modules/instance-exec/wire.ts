import type { AppContext } from '../../platform/context.js';
import type { Wired } from '../../platform/wiring.js';
import type { ApplicationsService } from '../applications/index.js';
import type { ExecSessionsRepository } from './exec.repository.js';
import { execRoutes } from './exec.routes.js';
import { InstanceExecService } from './exec.service.js';

/** `slipway exec`: commands inside running instances, served by the process that runs them. */
export function wireInstanceExec(deps: { ctx: AppContext; repository: ExecSessionsRepository; apps: ApplicationsService }) {
  const exec = new InstanceExecService(deps.ctx, deps.repository, deps.apps);
  return { exec, routes: [execRoutes(exec)] } satisfies Wired;
}
