export { wireInstanceExec } from './wire.js';
export { ExecSessionsRepository } from './exec.repository.js';
export { EXEC_FRAME } from './exec-stream.js';
export type { InstanceExecService } from './exec.service.js';
