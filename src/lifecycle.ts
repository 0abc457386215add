import type { App } from './platform/http/types.js';
import type { PlatformLogger } from './platform/wiring.js';
import { NO_ISOLATION_WARNING } from './platform/sandbox/index.js';
import type { Composition } from './services.js';

export interface StartOptions {
  composition: Composition;
  logger: PlatformLogger;
  /** Run this process's job workers (and their sweepers): false in the `api` role. */
  workers: boolean;
  /**
   * The HTTP app (none in the `worker` role), listening where `listen` says (tests inject instead). It may
   * still be building: registering ~300 routes then overlaps the earlier steps' waits (the edge process's
   * start), and the app is awaited only when its turn comes.
   */
  http?: { app: App | Promise<App>; listen?: { port: number; host: string } };
}

export interface Started {
  /** Where the API listens, when it does. */
  apiUrl: string | null;
  /**
   * Stops what start() started, in reverse order; once. `keepServing` (an upgrade: SIGUSR2 or
   * SLIPWAY_STOP_KEEPS_SERVING): the instances and add-on servers stay up, the next start adopts them.
   */
  stop(keepServing?: boolean): Promise<void>;
}

interface Step {
  name: string;
  start(): Promise<unknown> | void;
  stop?(keepServing: boolean): Promise<unknown> | void;
}

/**
 * Starts a built platform (src/services.ts) in one written order, and returns the stop that
 * undoes it in reverse. Building opened nothing; everything that runs in the background (a
 * timer, a connection, a listener, a child process) starts here. The database, the job
 * store and the runtime's driver were opened by `openPlatform` and are closed by it.
 */
export async function start(options: StartOptions): Promise<Started> {
  const started: Step[] = [];
  let apiUrl: string | null = null;
  const stop = once(async (keepServing: boolean = false) => {
    for (const step of started.reverse()) {
      try {
        await step.stop?.(keepServing);
      } catch (err) {
        options.logger.error({ err, step: step.name }, 'stopping failed');
      }
    }
  });
  try {
    for (const step of startOrder(options, (url) => (apiUrl = url))) {
      await step.start();
      started.push(step);
    }
  } catch (err) {
    // A start that fails half-way leaves nothing running behind it.
    await stop();
    throw err;
  }
  return { apiUrl, stop };
}

/** The start order, in one place. */
function startOrder({ composition, logger, workers, http }: StartOptions, listening: (url: string) => void): Step[] {
  const { ctx, background } = composition;
  const { jobs, runtime } = ctx;
  const runtimeLog = logger.child({ component: 'runtime' });
  const steps: Step[] = [];
  const add = (step: Step | null | false | undefined) => {
    if (step) steps.push(step);
  };
  // 1. The LISTEN connection: cached credentials learn of revocations made by any process.
  add({
    name: 'notifications',
    start: () =>
      background.followCredentialChanges().catch((err: unknown) => {
        // Without it cached credentials still expire after CREDENTIAL_CACHE_SECONDS.
        logger.warn({ err }, 'credential changes are not followed: revocations take effect after the cache TTL');
      }),
    stop: () => background.notifications.close(),
  });
  // 1b. Log drains: ship the output of the instances and the pipeline's logs; stopping sends what is queued once
  // more. Before the runtime and the add-ons, so it is stopped after them: what they read while they stop or let
  // go of their processes (the last output of each) is shipped too.
  const { drainShipper } = background;
  add(drainShipper && { name: 'log drains', start: () => drainShipper.start(), stop: () => drainShipper.stop() });
  // 2. The runtime (router, removal of leftovers) before anything that deploys.
  add(
    runtime && {
      name: 'runtime',
      async start() {
        await runtime.start({ logger: runtimeLog, workerId: () => jobs?.workerId ?? null });
        if (background.warnUnconfinedBuilds) runtimeLog.warn({ isolation: 'none' }, NO_ISOLATION_WARNING);
      },
      stop: (keepServing) => {
        if (keepServing) runtime.keepServingOnShutdown?.();
        return runtime.shutdown();
      },
    },
  );
  // 2b. Add-ons' servers (adopted or started) before the applications attached to them deploy.
  const { addonSupervisor } = background;
  add(
    addonSupervisor && {
      name: 'add-ons',
      start: () => addonSupervisor.start(),
      stop: (keepServing) => (keepServing ? addonSupervisor.detach() : addonSupervisor.shutdown()),
    },
  );
  const { metricsSampler, appLogLeader, guardWatcher, cronScheduler } = background;
  // 3. What watches the running applications: usage samples (and the autoscaler), whose pod logs to store.
  add(metricsSampler && { name: 'metrics sampler', start: () => metricsSampler.start(), stop: () => metricsSampler.stop() });
  add(appLogLeader && { name: 'application log leader', start: () => appLogLeader.start(), stop: () => appLogLeader.stop() });
  // 4. The current releases run again: a `reconcile` queued for every deployed application environment.
  add(runtime && { name: 'reconcile deployed', start: () => background.reconcileDeployed() });
  // 5. Guarded rollouts' judge and the cron scheduler.
  add(guardWatcher && { name: 'guard watcher', start: () => guardWatcher.start(), stop: () => guardWatcher.stop() });
  add(cronScheduler && { name: 'cron scheduler', start: () => cronScheduler.start(), stop: () => cronScheduler.stop() });
  // 6. Webhook deliveries: the delivery queue and the outbox's channel.
  add(jobs && { name: 'webhook deliveries', start: () => background.startWebhookDeliveries() });
  // 6b. Alert rules: this process asks for an evaluation each interval (pg-boss keeps one per interval).
  const { alertEvaluator } = background;
  add(workers && alertEvaluator && { name: 'alert rules', start: () => alertEvaluator.start(), stop: () => alertEvaluator.stop() });
  // 7. The job workers and their sweepers.
  add(
    jobs &&
      workers && {
        name: 'job workers',
        async start() {
          for (const { sweep, everyMs } of composition.sweepers) jobs.addSweeper(sweep, { everyMs });
          await jobs.startWorkers();
        },
        stop: () => jobs.stop(),
      },
  );
  // 8. Last, the API: requests arrive once everything behind them runs.
  add(
    http && {
      name: 'http',
      async start() {
        const app = await http.app;
        try {
          await app.ready();
          if (http.listen) listening(await app.listen(http.listen));
        } catch (err) {
          // Port in use, …: the app's own hooks (streams, LISTEN connection) close with it.
          await app.close().catch(() => {});
          throw err;
        }
      },
      stop: async () => (await http.app).close(),
    },
  );
  // 9. The SSH gateway (SSH_PORT), beside the API it shares its services with.
  const sshGateway = background.sshGateway;
  add(http && sshGateway && { name: 'ssh gateway', start: () => sshGateway.start(), stop: () => sshGateway.stop() });
  return steps;
}

function once<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  let done: Promise<void> | null = null;
  return (...args) => (done ??= fn(...args));
}
