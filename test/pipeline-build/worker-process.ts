/**
 * A pipeline worker in its own process (for the restart test): runs `build` jobs against
 * DATABASE_URL until it is killed. Prints `ready <worker id>` once polling.
 */
import { join } from 'node:path';
import { loadConfig } from '../../src/config.js';
import { SourceBuilder } from '../../src/platform/builder/index.js';
import type { AppContext } from '../../src/platform/context.js';
import { generateKeyText, parseKey, SecretBox } from '../../src/platform/crypto/secret-box.js';
import { createDb } from '../../src/platform/db/database.js';
import { PipelineJobs } from '../../src/platform/jobs/pipeline-jobs.js';
import { ImagesService } from '../../src/pipeline/index.js';
import { createCoreServices } from '../../src/services.js';
import { createRepositories } from '../../src/repositories.js';

const config = loadConfig();
const db = createDb(config.DATABASE_URL!, 3);
const secrets = new SecretBox({ current: parseKey(generateKeyText()), previous: [] });
const jobs = new PipelineJobs({ db, pollIntervalMs: 100, heartbeatIntervalMs: 500 });
const ctx: AppContext = { config, db, secrets, jobs };
const repos = createRepositories(db);
const { apps, config: configs } = createCoreServices(ctx, repos);
const images = new ImagesService(ctx, repos.images, apps, configs, [new SourceBuilder(join(config.dataDir, 'cache'))]);
images.registerJobs(jobs);
await jobs.startWorkers();
console.log(`ready ${jobs.workerId}`);
