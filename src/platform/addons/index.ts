// Add-ons on the local runtime: plans, credentials, the servers' commands and their supervisor.
// The add-ons module (src/modules/addons) owns the records; this is the machinery below it.
export * from './plans.js';
export * from './credentials.js';
export * from './attached.js';
export { missingServer, adminClient, quietClient, redisCommands, REPOSITORY, quote } from './servers.js';
export { AddonSupervisor, type AddonRecord } from './supervisor.js';
export type { AddonBackend } from './backend.js';
export * from './backups.js';
export { recordRestorePoints, type RestorePoint } from './restore-points.js';
export { ObjectStore, ObjectStoreError, type ObjectStoreSettings, type StoredObject } from './object-store.js';
