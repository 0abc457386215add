import type { AddonCredentials } from './credentials.js';
import type { AddonRecord } from './supervisor.js';

/**
 * Where add-ons' servers run, as the add-ons service sees it: the local supervisor (a sandbox
 * per server) or a Kubernetes cluster (CloudNativePG, StatefulSets). The composition root
 * (src/modules/addons/wire.ts) picks one from RUNTIME.
 */
export interface AddonBackend {
  readonly runs: 'local' | 'kubernetes';
  /** At platform start: takes over what a previous process left (servers, pending readiness). */
  start(): Promise<void>;
  /** Creates the server (or starts it again after an undelete); resolves when it is ready or has been handed to the cluster. */
  provision(record: AddonRecord): Promise<void>;
  /** Applies the row's plan anew (a resize). */
  restart(record: AddonRecord): Promise<void>;
  /** Stops the server and keeps its data (a deletion's grace period). */
  stop(id: string): Promise<void>;
  /** Removes the server and its data (purge). */
  remove(id: string): Promise<void>;
  /** Gives the server the attached applications' new password (a rotation). */
  rotate(record: AddonRecord, previous: AddonCredentials, next: AddonCredentials): Promise<void>;
  /** Who may reach it changed (attach, detach, swap): locally each sandbox gets its forwards at deploy. */
  attachmentsChanged?(id: string): Promise<void>;
  /** Stops following the servers and leaves them running (the next process takes them over). */
  detach(): Promise<void>;
  shutdown(): Promise<void>;
}
