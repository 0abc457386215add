// Persistent volumes' machinery, below the modules (src/modules/volumes owns the records).
export { VolumeDisks, type VolumeUsage } from './volume-disks.js';
export { mountPathProblem } from './mount-path.js';
export { planVolumes } from './plan-volumes.js';
