import { resolve } from 'node:path';
import { ConfigError } from './config-error.js';
import { findHaproxy } from './find-binary.js';
import ipaddr from 'ipaddr.js';
import { Type, type Static, type TSchema } from 'typebox';
import { Value } from 'typebox/value';

/**
 * The one place that reads the environment. Everything else receives a Config.
 * Values are validated once at start so a typo fails loudly instead of at first use.
 */
export const EnvSchema = Type.Object({
  /** Port the API (and the dashboard) listens on. */
  PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8080 }),
  /** Address the API listens on. */
  HOST: Type.String({ default: '0.0.0.0' }),
  /**
   * Port of the SSH gateway (`git push` over SSH with users' registered keys; Ancla's `ancla ssh`
   * and `ancla shell`); 0: no SSH server. It listens on HOST; its host key is generated once into
   * DATA_DIR/ssh and its fingerprint logged at start.
   */
  SSH_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 0 }),
  /** Host name clients are told to reach the SSH gateway at (Ancla's exec answer); empty: the host name of the API request. */
  SSH_HOST: Type.String({ default: '', maxLength: 253 }),
  /** Where the embedded PostgreSQL, the generated keys (secret.key, the registry signing key), build storage and logs live. */
  DATA_DIR: Type.String({ default: './data' }),
  /** Use this PostgreSQL (14+) instead of the embedded one, e.g. `postgres://slipway:…@db:5432/slipway`; its role should own only Slipway's database (see DATABASE_ALLOW_SUPERUSER). */
  DATABASE_URL: Type.Optional(Type.String({ minLength: 1 })),
  /** Names the embedded PostgreSQL's unix socket (`DATA_DIR/pg-socket/.s.PGSQL.<port>`); it listens on no TCP port. */
  EMBEDDED_PG_PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 54329 }),
  /**
   * Start even when DATABASE_URL's role is a superuser, a member of pg_read_server_files, pg_write_server_files or
   * pg_execute_server_program, or has CREATEROLE before PostgreSQL 16: whoever learns its password runs programs and
   * reads files on the database host. Refused otherwise; allowed, a warning is printed at every start.
   */
  DATABASE_ALLOW_SUPERUSER: Type.Boolean({ default: false }),
  /** Key sealing secret variables and stored private keys (AES-256-GCM): 32 bytes as base64 or hex, or any passphrase. Unset: generated into DATA_DIR/secret.key. Every process of one installation needs the same key. */
  SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** Comma-separated older keys, still accepted for reading while `npm run admin -- secrets rotate` re-seals everything under SECRET_KEY. */
  SECRET_KEY_PREVIOUS: Type.Optional(Type.String()),
  /** E-mail of the first administrator, created at start when there are no users yet (with ADMIN_PASSWORD). */
  ADMIN_EMAIL: Type.Optional(Type.String()),
  /** Password of the first administrator (used only when there are no users yet). */
  ADMIN_PASSWORD: Type.Optional(Type.String()),
  /** Username of the first administrator; unset: the part of ADMIN_EMAIL before `@`. */
  ADMIN_USERNAME: Type.Optional(Type.String()),
  /** Least severe level written (JSON lines on stdout); `debug` also shows the embedded PostgreSQL's output and one line per edge request. */
  LOG_LEVEL: Type.Union(
    [
      Type.Literal('fatal'),
      Type.Literal('error'),
      Type.Literal('warn'),
      Type.Literal('info'),
      Type.Literal('debug'),
      Type.Literal('trace'),
      Type.Literal('silent'),
    ],
    { default: 'info' },
  ),
  /**
   * Whether people may sign in with a password. Off: only single sign-on (the OpenID Connect issuers a site
   * administrator adds under /v1/sso/issuers) signs in to the dashboard; API keys keep working. Break-glass for
   * an administrator locked out: `npm run admin -- api-keys create` on the server, or set this back to true.
   */
  PASSWORD_LOGIN: Type.Boolean({ default: true }),
  /** Lifetime of a login session (hours; default 14 days). */
  SESSION_TTL_HOURS: Type.Integer({ minimum: 1, default: 24 * 14 }),
  /**
   * Minutes a login session may go unused before it ends (default 3 days; 0: only SESSION_TTL_HOURS ends it).
   * Its next request after that gets 401 and the person signs in again.
   */
  SESSION_IDLE_MINUTES: Type.Integer({ minimum: 0, default: 60 * 24 * 3 }),
  /** How long an invitation to an organization can be accepted (hours; default 7 days). */
  INVITATION_TTL_HOURS: Type.Integer({ minimum: 1, maximum: 24 * 90, default: 24 * 7 }),
  /** Seconds a verified API key or session is trusted without a lookup (0 turns the cache off); changes are announced at once. */
  CREDENTIAL_CACHE_SECONDS: Type.Integer({ minimum: 0, maximum: 60, default: 5 }),
  /**
   * Failed logins of one account (from every address) in the window before attempts from addresses that never
   * signed in to it wait (1 s, 2 s, 4 s, ... up to LOGIN_MAX_DELAY_SECONDS); its known addresses are spared.
   */
  LOGIN_MAX_ATTEMPTS: Type.Integer({ minimum: 1, default: 10 }),
  /** Failed logins per (account, address) before each further attempt from that pair waits (1 s, 2 s, 4 s, ...). */
  LOGIN_FREE_ATTEMPTS: Type.Integer({ minimum: 1, default: 3 }),
  /** The longest wait a failed login imposes (seconds): a backoff, never a lockout. */
  LOGIN_MAX_DELAY_SECONDS: Type.Integer({ minimum: 1, default: 60 }),
  /** Distinct accounts (never signed in from it) one address may try in the window; then one new account per backoff. Accounts known there are spared. */
  LOGIN_ADDRESS_MAX_ACCOUNTS: Type.Integer({ minimum: 1, default: 20 }),
  /** The window (seconds) the failed-login counts of LOGIN_MAX_ATTEMPTS and LOGIN_ADDRESS_MAX_ACCOUNTS cover. */
  LOGIN_WINDOW_SECONDS: Type.Integer({ minimum: 1, default: 15 * 60 }),
  /**
   * Free space on DATA_DIR's filesystem (MiB) below which the operator is warned: a log line when it
   * drops below, the gauge slipway_data_dir_free_bytes, and `disk: "low"` in /v1/integrations/health.
   */
  DISK_LOW_FREE_MB: Type.Integer({ minimum: 1, default: 2048 }),
  /** How often that free space is checked (seconds). */
  DISK_CHECK_INTERVAL_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
  /** Largest request body (bytes); larger requests get 413. */
  BODY_LIMIT_BYTES: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
  /** Most bytes one `git push` may send to an application's repository (after decompression); larger pushes are refused. */
  GIT_PUSH_MAX_BYTES: Type.Integer({ minimum: 1024 * 1024, default: 512 * 1024 * 1024 }),
  /** Longest a `git push` may take to send and store its objects (seconds); git is stopped after it. */
  GIT_PUSH_TIMEOUT_SECONDS: Type.Integer({ minimum: 10, maximum: 3600, default: 600 }),
  /**
   * Most bytes of files one build's source may hold once checked out (MiB): a small pushed or
   * fetched pack can hold a huge file (zeros compress a thousandfold); past it the build fails before extracting anything.
   */
  SOURCE_MAX_MB: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 4096 }),
  /** Longest a `git push` shows its build and deploy (seconds); past it the push ends and names the command that follows the rest. */
  GIT_PUSH_FOLLOW_SECONDS: Type.Integer({ minimum: 10, maximum: 7200, default: 1800 }),
  /** Most variables one configuration scope may hold (a bulk request past it is refused, 422). */
  CONFIG_MAX_VARIABLES_PER_SCOPE: Type.Integer({ minimum: 1, default: 1000 }),
  /** Most bytes of names and values one configuration scope may hold (secrets count by their sealed size). */
  CONFIG_MAX_BYTES_PER_SCOPE: Type.Integer({ minimum: 1024, default: 1024 * 1024 }),
  /**
   * Which proxies' X-Forwarded-For/-Proto to believe (client address for login limits and the audit, Secure cookie):
   * `false` (none), a number of hops (`1`: the one proxy in front), or a comma-separated list of proxy addresses/CIDRs;
   * `true` believes any sender (warned at start).
   */
  TRUST_PROXY: Type.String({ default: 'false', minLength: 1 }),
  /** Port of the edge (HTTP) in front of deployed applications (production: 80 with ROUTER_HTTPS_PORT=443). */
  ROUTER_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 8081 }),
  /** Applications are served as `{app}.{project}.{org}.<ROUTER_DOMAIN>` (and `{app}.{env}.{project}.{org}.<ROUTER_DOMAIN>` outside production). */
  ROUTER_DOMAIN: Type.String({ default: 'localhost' }),
  /** Address the application router listens on (tests: 127.0.0.1). */
  ROUTER_HOST: Type.String({ default: '0.0.0.0' }),
  /** HTTPS port of the edge for custom domains (production: 443); unset: no HTTPS listener. */
  ROUTER_HTTPS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  /** ACME directory certificates of verified custom domains come from (Let's Encrypt, or any RFC 8555 server); unset: no certificates. */
  ACME_DIRECTORY_URL: Type.Optional(Type.String({ minLength: 1 })),
  /** Contact address of the platform's ACME account. */
  ACME_EMAIL: Type.Optional(Type.String({ minLength: 3 })),
  /** PEM file of a CA to trust for the ACME directory itself (a private CA, e.g. a local pebble). */
  ACME_CA_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /** Certificates are renewed this many days before they expire. */
  ACME_RENEW_DAYS: Type.Integer({ minimum: 1, default: 30 }),
  /** DNS server (`address` or `address:port`) the ownership check asks for `_slipway-challenge.<domain>` TXT records; unset: the system's resolvers. */
  DOMAIN_DNS_SERVER: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * What serves applications. Unset: `haproxy` where HAProxy is installed and ROUTER_PORT / ROUTER_HTTPS_PORT are
   * fixed (not 0), else `builtin`; the start line says which and why. `haproxy` (Debian's HAProxy 2.6+, started,
   * supervised and adopted by the platform as a daemon of its own; a deployment switch changes server slots through
   * its runtime API, no reload; nginx's throughput at about its CPU per request: bench/README.md), `builtin` (Node,
   * no dependency, any port), `nginx` (Debian's nginx, started and reconfigured by the platform; each switch is an
   * nginx reload, at which a request sent on a kept-alive connection at that instant can fail and is retried by
   * browsers: docs/operations.md) or `caddy` (a Caddy 2 configured through its admin API).
   */
  EDGE_DRIVER: Type.Optional(Type.Union([Type.Literal('builtin'), Type.Literal('caddy'), Type.Literal('nginx'), Type.Literal('haproxy')])),
  /** With EDGE_DRIVER=nginx and the platform running as root: the unprivileged user nginx's workers run as. */
  EDGE_NGINX_USER: Type.String({ default: 'www-data', pattern: '^[a-z_][a-z0-9_-]{0,31}$' }),
  /** With EDGE_DRIVER=haproxy and the platform running as root: the unprivileged user (and its primary group) HAProxy's workers run as. */
  EDGE_HAPROXY_USER: Type.String({ default: 'haproxy', pattern: '^[a-z_][a-z0-9_-]{0,31}$' }),
  /** With EDGE_DRIVER=caddy: its admin API (the platform loads whole configurations there), on a unix socket only it and the platform open. */
  CADDY_ADMIN_URL: Type.String({ default: 'unix//run/slipway-caddy/admin.sock' }),
  /** Accept a CADDY_ADMIN_URL on TCP, which any process on the host reaching it can use to rewrite every route (issue 27). */
  CADDY_ADMIN_ALLOW_TCP: Type.Boolean({ default: false }),
  /**
   * With EDGE_DRIVER=caddy and Caddy running as its own user: the group id (Caddy's) that may connect to the
   * access-log socket DATA_DIR/edge/caddy-access.sock; unset: only the platform's user (Caddy runs as it).
   */
  CADDY_ACCESS_LOG_GID: Type.Optional(Type.Integer({ minimum: 0 })),
  /** With EDGE_DRIVER=caddy: certificates of custom domains from the platform's ACME (`platform`) or from Caddy's own (`caddy`). */
  EDGE_CERTIFICATES: Type.Union([Type.Literal('platform'), Type.Literal('caddy')], { default: 'platform' }),
  /** How often the edge adds its per-application request counters to PostgreSQL. */
  REQUEST_STATS_FLUSH_MS: Type.Integer({ minimum: 100, default: 5000 }),
  /** Longest wait for in-flight requests to a retired instance before it is stopped. */
  ROUTER_DRAIN_TIMEOUT_MS: Type.Integer({ minimum: 0, default: 30_000 }),
  /** First restart delay of a crashed instance; doubles per consecutive crash, at most 30 s. */
  RUNTIME_RESTART_BACKOFF_MS: Type.Integer({ minimum: 10, default: 1000 }),
  /** Time between TERM and KILL when an instance is stopped. */
  RUNTIME_STOP_GRACE_MS: Type.Integer({ minimum: 0, default: 10_000 }),
  /**
   * Seconds a new web instance may take to answer its health check before its deployment fails
   * (saying what the check got and on which port), for applications that set no `health_check_timeout`.
   * The deployment's own `deployment_timeout` still bounds it.
   */
  HEALTH_CHECK_TIMEOUT_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
  /**
   * Stability window: seconds a deployment's new instances must keep running after they answered
   * healthy before traffic switches to them and it completes; a crash inside it fails the deployment
   * and the previous release keeps serving. For applications that set no `stability_window`; 0: none.
   */
  DEPLOY_STABILITY_WINDOW_SECONDS: Type.Integer({ minimum: 0, maximum: 600, default: 20 }),
  /**
   * The stability window of an environment's first deployment (nothing serving yet, so no previous release to keep),
   * for applications that set no `stability_window`: short, so a newcomer's first `deploy --wait` ends soon after the
   * app answers, yet an app that dies right after its first answer still fails with its exit and last lines.
   * Never longer than DEPLOY_STABILITY_WINDOW_SECONDS.
   */
  DEPLOY_FIRST_STABILITY_WINDOW_SECONDS: Type.Integer({ minimum: 0, maximum: 600, default: 5 }),
  /**
   * Whether stopping the platform (SIGTERM, SIGINT) stops only the control plane and leaves the
   * applications' instances running for the next start to adopt (an upgrade without downtime).
   * Off: a stop stops the instances too. SIGUSR2 always stops the control plane only.
   */
  SLIPWAY_STOP_KEEPS_SERVING: Type.Boolean({ default: false }),
  /** Where applications run: `local` (processes on this machine, the default) or `kubernetes`. */
  RUNTIME: Type.Union([Type.Literal('local'), Type.Literal('kubernetes')], { default: 'local' }),
  /**
   * `sandbox` (default): builds, release/postdeploy commands and instances of the local runtime
   * run as an unprivileged user per application in bubblewrap with cgroup limits; the runtime
   * refuses to start them when that is impossible. `none`: as root, unconfined (single team only).
   */
  RUNTIME_ISOLATION: Type.Union([Type.Literal('sandbox'), Type.Literal('none')], { default: 'sandbox' }),
  /** uids the sandbox users come from (`first-last`), one per application. */
  SANDBOX_UID_RANGE: Type.String({ default: '200000-299999', pattern: '^\\s*\\d+\\s*-\\s*\\d+\\s*$' }),
  /**
   * Host loopback ports (`first-last`) add-ons' servers are reached on, one per add-on. Only the
   * network helpers of attached applications' sandboxes forward them (see docs/addons.md); keep
   * the range outside the ephemeral ports instances are given.
   */
  ADDONS_PORT_RANGE: Type.String({ default: '15400-15999', pattern: '^\\s*\\d+\\s*-\\s*\\d+\\s*$' }),
  /** How long a deleted add-on (its data) is kept, stopped, and can be undeleted before it is removed for good. */
  ADDONS_DELETE_GRACE_HOURS: Type.Integer({ minimum: 0, default: 72 }),
  /**
   * Hours between the scheduled base backups of each running Postgres add-on (its WAL is archived
   * continuously in between, so a restore reaches any time since its oldest backup kept); 0: only
   * backups taken on demand (`slipway addons backups create`).
   */
  ADDONS_BACKUP_INTERVAL_HOURS: Type.Integer({ minimum: 0, default: 24 }),
  /** Days a Postgres add-on's base backups (and the WAL they need) are kept; its newest backup is always kept. */
  ADDONS_BACKUP_RETENTION_DAYS: Type.Integer({ minimum: 1, default: 7 }),
  /**
   * Hours between scheduled restore drills of each Postgres add-on (its latest backup restored into
   * a scratch server, started, rows counted; a failure is a webhook event); 0: on demand only.
   */
  ADDONS_RESTORE_DRILL_INTERVAL_HOURS: Type.Integer({ minimum: 0, default: 168 }),
  /**
   * An S3-compatible object store for add-on backups (`https://s3.eu-west-1.amazonaws.com`, a MinIO or
   * Ceph address, …). Set with BACKUP_S3_BUCKET and the keys: Postgres base backups and archived WAL
   * are kept there (local runtime: uploaded by the platform, streamed out of the add-on's offline
   * sandbox; Kubernetes: CloudNativePG's own object store). Unset: backups stay in the local repository.
   */
  BACKUP_S3_ENDPOINT: Type.Optional(Type.String({ minLength: 1, pattern: '^https?://' })),
  /** The bucket add-on backups go to (with BACKUP_S3_ENDPOINT); it must exist. */
  BACKUP_S3_BUCKET: Type.Optional(Type.String({ minLength: 3, maxLength: 63 })),
  /** The region requests are signed for (SigV4). */
  BACKUP_S3_REGION: Type.String({ minLength: 1, default: 'us-east-1' }),
  /** A key prefix inside the bucket, so several platforms can share one; each add-on's objects are below `<prefix><add-on id>/`. */
  BACKUP_S3_PREFIX: Type.String({ default: 'slipway/' }),
  /** The access key id for BACKUP_S3_ENDPOINT. */
  BACKUP_S3_ACCESS_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  /** The secret access key for BACKUP_S3_ENDPOINT: never logged nor shown. */
  BACKUP_S3_SECRET_ACCESS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Address buckets as `<endpoint>/<bucket>` (MinIO, Ceph, most self-hosted stores) rather than `<bucket>.<endpoint>`.
   * RUNTIME=kubernetes takes only `true`: CloudNativePG's barman-cloud always addresses an endpoint path-style.
   */
  BACKUP_S3_FORCE_PATH_STYLE: Type.Boolean({ default: true }),
  /**
   * Most archived WAL one Postgres add-on may keep in the object store (MiB; 0: no cap), so one
   * member's heavy writes cannot fill the bucket every add-on shares. Past it that add-on's WAL
   * shipping stops (its newer WAL stays in its own directory) and it gets a failed backup entry
   * saying so with an `addon.backup_failed` event; it resumes once retention has removed older WAL.
   * Local runtime only (CloudNativePG's archive on Kubernetes has no such bound).
   */
  BACKUP_S3_WAL_CAP_MB: Type.Integer({ minimum: 0, default: 10240 }),
  /** Most processes and threads one sandboxed instance or build may have at once. */
  SANDBOX_PIDS_MAX: Type.Integer({ minimum: 16, maximum: 1_000_000, default: 1024 }),
  /**
   * Whether sandboxed builds, one-off commands and instances may connect out (npm install, APIs).
   * Each sandbox has its own network namespace either way: the host's loopback services and
   * other instances stay unreachable; off leaves it only its own loopback (and a web instance's
   * port, which the edge reaches).
   */
  SANDBOX_OUTBOUND: Type.Boolean({ default: true }),
  /** Memory limit of one sandboxed build command (MiB): past it the kernel kills the build, which fails with an OOM reason. */
  BUILD_MEMORY_MB: Type.Integer({ minimum: 64, maximum: 1024 * 1024, default: 2048 }),
  /**
   * Colon-separated folders of further Node installations for source builds, each `<folder>/<any name>/bin/node`
   * (a nodejs.org tarball unpacked there). A build uses the newest installed Node satisfying package.json's
   * `engines.node` (the Node on PATH is always offered) or fails listing what is installed; nothing is downloaded.
   * Sandboxed builds see only installations below /usr or /opt.
   */
  BUILD_NODE_DIRS: Type.String({ default: '/opt/node' }),
  /** CPU limit of one sandboxed build command (millicores: 1000 = one core). */
  BUILD_CPU_MILLICORES: Type.Integer({ minimum: 100, maximum: 1_000_000, default: 1000 }),
  /** Mount point of the cgroup hierarchy the sandbox limits are applied with (v2 there or at `<root>/unified`, else v1 below it). */
  CGROUP_ROOT: Type.String({ default: '/sys/fs/cgroup', minLength: 1 }),
  /** `auto`: cgroup v2 when it offers memory, cpu and pids, else v1; `1` or `2`: only that version (fail closed otherwise). */
  CGROUP_VERSION: Type.Union([Type.Literal('auto'), Type.Literal('1'), Type.Literal('2')], { default: 'auto' }),
  /** Kubeconfig file for RUNTIME=kubernetes; unset: in-cluster credentials, else ~/.kube/config. */
  KUBECONFIG: Type.Optional(Type.String({ minLength: 1 })),
  /** Set by Kubernetes in every pod: with RUNTIME=kubernetes and no KUBECONFIG, use the pod's service account. */
  KUBERNETES_SERVICE_HOST: Type.Optional(Type.String()),
  /** Each organization's applications run in namespace `<prefix><organization slug>`. */
  KUBERNETES_NAMESPACE_PREFIX: Type.String({ default: 'slipway-', pattern: '^[a-z0-9]([-a-z0-9]*)?$', maxLength: 20 }),
  /** JSON object of annotations on every Ingress, e.g. {"cert-manager.io/cluster-issuer":"letsencrypt"} for custom domains' TLS. */
  KUBERNETES_INGRESS_ANNOTATIONS: Type.Optional(Type.String({ pattern: '^\\s*\\{[\\s\\S]*\\}\\s*$' })),
  /** Ingress class for web processes' public host names; unset: no Ingress (Services only). */
  KUBERNETES_INGRESS_CLASS: Type.Optional(Type.String({ minLength: 1 })),
  /** Application logs older than this are deleted (hours; default 3 days). */
  APP_LOG_RETENTION_HOURS: Type.Integer({ minimum: 1, maximum: 24 * 365, default: 72 }),
  /** Each application keeps at most about this much log text (bytes; default 64 MiB): the oldest lines go first. */
  APP_LOG_MAX_BYTES_PER_APP: Type.Integer({ minimum: 4096, default: 64 * 1024 * 1024 }),
  /** Lines one instance (local runtime) may hand the platform per second; more are dropped and counted in its log. */
  APP_LOG_LINES_PER_SECOND: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 5000 }),
  /** Bytes of output one instance (local runtime) may hand the platform per second; more are dropped and counted. */
  APP_LOG_BYTES_PER_SECOND: Type.Integer({ minimum: 1024, maximum: 1024 * 1024 * 1024, default: 2 * 1024 * 1024 }),
  /** Namespace of the ingress controller: the only other namespace allowed to reach an organization's pods. */
  KUBERNETES_INGRESS_NAMESPACE: Type.String({ default: 'ingress-nginx', pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', maxLength: 63 }),
  /** How often workers judge the deployments their guards watch (milliseconds). */
  GUARD_CHECK_MS: Type.Integer({ minimum: 100, default: 5000 }),
  /** How often alert rules are evaluated (seconds): one `alerts` job per interval across all processes. */
  ALERT_EVALUATION_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 30 }),
  /** Bearer token of `GET /metrics` (Prometheus); unset: the endpoint answers 404. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /** How often the observability sampler records the runtime's usage. */
  OBSERVABILITY_SAMPLE_SECONDS: Type.Integer({ minimum: 1, default: 60 }),
  /** How often each worker process looks for due cron entries (milliseconds). */
  CRON_POLL_MS: Type.Integer({ minimum: 50, maximum: 60_000, default: 5000 }),
  /** Accept a sixth, leading seconds field in cron schedules (tests and demos; a schedule per second is costly). */
  CRON_SECONDS_FIELD: Type.Boolean({ default: false }),
  /** Where `owner/repo` repositories are cloned from. */
  GITHUB_URL: Type.String({ default: 'https://github.com' }),
  /** Secret of `POST /v1/integrations/github/hooks` (push to deploy, pull request previews); unset: hooks are refused. */
  GITHUB_WEBHOOK_SECRET: Type.Optional(Type.String()),
  /** Id of the GitHub App that clones private repositories (with GITHUB_APP_PRIVATE_KEY or GITHUB_APP_PRIVATE_KEY_FILE). */
  GITHUB_APP_ID: Type.Optional(Type.String({ minLength: 1 })),
  /** The GitHub App's private key (PEM). */
  GITHUB_APP_PRIVATE_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** A file holding the GitHub App's private key (instead of GITHUB_APP_PRIVATE_KEY). */
  GITHUB_APP_PRIVATE_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * The App's setup flow (linking an installation to the organization whose admin installed it):
   * its URL name (github.com/apps/<slug>) and OAuth client, with which GitHub confirms who installed it.
   */
  GITHUB_APP_SLUG: Type.Optional(Type.String({ minLength: 1, pattern: '^[A-Za-z0-9-]+$' })),
  /** The GitHub App's OAuth client id (its setup flow; see GITHUB_APP_SLUG). Unset: only a site administrator links installations. */
  GITHUB_APP_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  /** The GitHub App's OAuth client secret (its setup flow; see GITHUB_APP_SLUG). */
  GITHUB_APP_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  /** Where installation access tokens are asked for. */
  GITHUB_API_URL: Type.String({ default: 'https://api.github.com' }),
  /** A personal access token for commit statuses and deployments where no App installation covers the repository. */
  GITHUB_TOKEN: Type.Optional(Type.String({ minLength: 1 })),
  /** How long a closed preview or deleted environment stays readable before it is swept. */
  PREVIEW_RETENTION_HOURS: Type.Number({ minimum: 0, default: 168 }),
  /** Container registry images are pushed to as `<registry>/<org>/<project>/<app>:<version>`; Slipway is its token service (docs/operations.md, the registry). */
  REGISTRY_URL: Type.Optional(Type.String()),
  /** The `service` the registry's token auth names (its `auth.token.service`). */
  REGISTRY_SERVICE: Type.String({ default: 'slipway-registry' }),
  /** The `issuer` of registry tokens (the registry's `auth.token.issuer`). */
  TOKEN_ISSUER: Type.String({ default: 'slipway' }),
  /** Registry token signing key (PEM; may also hold the certificate). Unset: generated in DATA_DIR/registry/. */
  REGISTRY_SIGNING_KEY_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /** Certificate of the registry token signing key (PEM). Unset: generated next to the key. */
  REGISTRY_SIGNING_CERT_FILE: Type.Optional(Type.String({ minLength: 1 })),
  /** Lifetime of a registry token (seconds). */
  REGISTRY_TOKEN_TTL_SECONDS: Type.Integer({ minimum: 30, maximum: 3600, default: 300 }),
  /**
   * Other registries members may deploy images from (`slipway deploy --image`), comma-separated `host[:port]`, e.g.
   * `ghcr.io,registry.example.com:5000`; the platform's own (REGISTRY_URL) is always allowed. Unset: only REGISTRY_URL.
   * A host listed as `http://host:port` is pulled over plain HTTP.
   */
  IMAGE_PULL_REGISTRIES: Type.Optional(Type.String()),
  /** containers/storage root of Dockerfile builds (vfs driver); default DATA_DIR/containers. */
  BUILDAH_STORAGE_ROOT: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Storage driver of each application's own Dockerfile build storage (sandboxed builds): `vfs` copies every layer in
   * full, works everywhere; `overlay` stacks layers with kernel overlayfs inside the build's user namespace (Linux 5.11
   * or later), a rebuild about twice as fast; `auto` (default) uses overlay when the first build finds it works here,
   * else vfs (said in that build's log). Each driver keeps its own storage, so switching starts with an empty layer cache.
   */
  BUILDAH_STORAGE_DRIVER: Type.Union([Type.Literal('auto'), Type.Literal('vfs'), Type.Literal('overlay')], { default: 'auto' }),
  /**
   * Where the `all` role's edge runs: `separate` spawns (or adopts) an edge process of its own that outlives this one,
   * serving the last route table it received (DATA_DIR/edge/routes.json) through a crash or an upgrade of the control
   * plane; `in-process` runs the edge from this process. Unset: `in-process` for `haproxy` and `nginx` (their proxy is
   * a daemon of its own that keeps serving without this process and is adopted by the next start: a Node process
   * beside it would only cost memory), `separate` for `builtin` and `caddy`. With `builtin` in-process, applications
   * stop with the control plane.
   */
  EDGE_PROCESS: Type.Optional(Type.Union([Type.Literal('separate'), Type.Literal('in-process')])),
  /**
   * Where an edge-role process writes its log: `stdout` (default: a service manager's journal) or `file`
   * (DATA_DIR/edge/edge.log, at most 4 MiB plus one rotated file: what the separate edge of `npm start` uses).
   */
  EDGE_LOG: Type.Union([Type.Literal('stdout'), Type.Literal('file')], { default: 'stdout' }),
  /**
   * How long the edge holds a request without a body while every instance of its application refuses connections
   * (instances being replaced after a control-plane restart), trying again as routes change, before answering 502.
   */
  ROUTER_RETRY_WINDOW_MS: Type.Integer({ minimum: 0, maximum: 120_000, default: 15_000 }),
  /** `all` runs API and workers in one process; `api` or `worker` splits them; `edge` only serves applications. */
  SLIPWAY_ROLE: Type.Union([Type.Literal('all'), Type.Literal('api'), Type.Literal('worker'), Type.Literal('edge')], { default: 'all' }),
  /**
   * Pipeline jobs (builds, releases, deploys) one worker process runs at once; one per application at a time, so a
   * slow or failing deploy of one application holds one of these and the others' go on beside it.
   */
  PIPELINE_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 64, default: 4 }),
  /**
   * Pipeline jobs of one organization running at once across all workers (fairness between tenants): deploys of
   * different applications of one organization run side by side up to this; more wait ("organization limit N reached").
   */
  PIPELINE_ORG_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1024, default: 3 }),
  /** Pipeline jobs running at once on the whole site, across all worker processes; more wait ("platform limit N reached"). */
  PIPELINE_SITE_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 4096, default: 8 }),
  /** Pipeline jobs of one organization waiting or running; more are refused with 429. */
  PIPELINE_ORG_QUEUE_LIMIT: Type.Integer({ minimum: 1, maximum: 100_000, default: 20 }),
  /**
   * Pipeline jobs running at once for all the organizations one user created, together: creating another
   * organization does not reset its creator's share.
   */
  PIPELINE_USER_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 1024, default: 4 }),
  /** Pipeline jobs waiting or running for all the organizations one user created, together; more are refused with 429. */
  PIPELINE_USER_QUEUE_LIMIT: Type.Integer({ minimum: 1, maximum: 100_000, default: 40 }),
  /** Pipeline jobs waiting or running on the whole site; more are refused with 429. */
  PIPELINE_SITE_QUEUE_LIMIT: Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1000 }),
  /** Organizations a user who is not a site administrator may create. */
  ORGS_PER_USER_MAX: Type.Integer({ minimum: 0, maximum: 100_000, default: 10 }),
  /**
   * Disk an organization may use (artifacts, build storage images, caches, logs; every file counts 4 KiB beyond its size)
   * before new builds are refused with 409; 0: no quota. A site administrator sets one per organization with
   * `PUT /v1/organizations/{slug}/pipeline-limits {"disk_quota_mb": 500}` (`null`: this default).
   */
  ORG_DISK_QUOTA_MB: Type.Integer({ minimum: 0, maximum: 1_000_000_000, default: 20_480 }),
  /** Releases kept per environment for rollback; older ones' images are garbage-collected (a rollback to one answers 409). */
  RELEASES_KEPT_PER_ENVIRONMENT: Type.Integer({ minimum: 1, maximum: 10_000, default: 10 }),
  /** How often disk use is measured and unreferenced images collected, for every organization. */
  STORAGE_SWEEP_SECONDS: Type.Integer({ minimum: 10, maximum: 7 * 86_400, default: 600 }),
  /**
   * A build running longer than this fails (seconds). A site administrator sets one per organization with
   * `PUT /v1/organizations/{slug}/pipeline-limits {"build_timeout_seconds": 600}` (`null`: this default).
   */
  BUILD_TIMEOUT_SECONDS: Type.Integer({ minimum: 10, maximum: 24 * 3600, default: 1800 }),
  /**
   * Comma-separated folders every user may build from by local path or file:// (otherwise only
   * site administrators may use local sources). Unset: none.
   */
  SOURCE_PATH_ALLOWLIST: Type.Optional(Type.String()),
  /** Outbound webhooks may target loopback and private addresses (a trusted single-network install, tests). */
  WEBHOOK_ALLOW_PRIVATE: Type.Boolean({ default: false }),
  /** The dashboard's address as people reach it, for links in Slack/Discord notifications; default http://localhost:PORT. */
  DASHBOARD_URL: Type.Optional(Type.String({ minLength: 1 })),
  /** Tries of one webhook delivery before it is marked failed (the first included). */
  WEBHOOK_MAX_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 20, default: 8 }),
  /** Seconds before a failed delivery's first retry; each later one waits about twice as long. */
  WEBHOOK_RETRY_DELAY_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 10 }),
  /** A receiver must answer within this time (milliseconds). */
  WEBHOOK_TIMEOUT_MS: Type.Integer({ minimum: 100, maximum: 60_000, default: 10_000 }),
  /**
   * The SMTP server e-mail goes through (notification channels of kind `email`, invitations), as one URL:
   * `smtp://user:password@host:587` (STARTTLS per SMTP_TLS) or `smtps://…:465` (TLS from the start). Unset: SMTP_HOST.
   * The password is never logged nor shown.
   */
  SMTP_URL: Type.Optional(Type.String({ minLength: 1, pattern: '^smtps?://' })),
  /** The SMTP server's host (instead of SMTP_URL, with SMTP_PORT, SMTP_USER, SMTP_PASSWORD). Neither set: e-mail is off. */
  SMTP_HOST: Type.Optional(Type.String({ minLength: 1 })),
  /** The SMTP server's port (with SMTP_HOST). */
  SMTP_PORT: Type.Integer({ minimum: 1, maximum: 65535, default: 587 }),
  /** The SMTP user (with SMTP_HOST); unset: no authentication. */
  SMTP_USER: Type.Optional(Type.String({ minLength: 1 })),
  /** The SMTP user's password (with SMTP_HOST and SMTP_USER). */
  SMTP_PASSWORD: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * How the SMTP connection is protected: `starttls` (upgrade required; the connection fails without it), `implicit`
   * (TLS from the first byte, port 465; what an `smtps://` SMTP_URL means), `none` (plain text: a relay on this host only).
   */
  SMTP_TLS: Type.Union([Type.Literal('starttls'), Type.Literal('implicit'), Type.Literal('none')], { default: 'starttls' }),
  /** The sender of Slipway's e-mail (`Name <address>` or an address). */
  SMTP_FROM: Type.String({ minLength: 3, default: 'Slipway <slipway@localhost>' }),
  /**
   * Lines one log drain may hold in each process while it is slow or down (and lines waiting for their names);
   * beyond, lines are dropped and counted (`lines_dropped`), so a drain never slows an application or the platform.
   */
  LOG_DRAIN_BUFFER_LINES: Type.Integer({ minimum: 10, maximum: 1_000_000, default: 10_000 }),
  /** Comma-separated folders that local-path repositories must lie in; unset allows any path (single-user machines). */
  LOCAL_REPOSITORY_ROOTS: Type.Optional(Type.String()),
});

export type Env = Static<typeof EnvSchema>;

export type EdgeDriverName = 'builtin' | 'caddy' | 'nginx' | 'haproxy';

export type EdgeProcessMode = 'separate' | 'in-process';

export interface Config extends Omit<Env, 'EDGE_DRIVER' | 'EDGE_PROCESS'> {
  dataDir: string;
  /** EDGE_DRIVER as set, or as chosen when unset (`edgeDriverChoice` says which and why). */
  EDGE_DRIVER: EdgeDriverName;
  edgeDriverChoice: string;
  /** EDGE_PROCESS as set, or the driver's default when unset. */
  EDGE_PROCESS: EdgeProcessMode;
}

export { ConfigError };

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<Env> = {}): Config {
  const relevant: Record<string, unknown> = {};
  for (const key of Object.keys(EnvSchema.properties)) {
    const raw = env[key];
    if (raw !== undefined && raw !== '') relevant[key] = raw;
  }
  Object.assign(relevant, overrides);
  const withDefaults = Value.Default(EnvSchema, Value.Convert(EnvSchema, relevant));
  if (!Value.Check(EnvSchema, withDefaults)) {
    // One message per variable (checked one by one: the whole-object errors stop early), and a
    // choice lists its values (the raw errors say "must be equal to constant" once per value).
    const byName = new Map<string, string>();
    const values = withDefaults as Record<string, unknown>;
    for (const [name, schema] of Object.entries(EnvSchema.properties) as Array<
      [string, TSchema & { anyOf?: Array<{ const?: unknown }> }]
    >) {
      if (values[name] === undefined || Value.Check(schema, values[name])) continue;
      const first = [...Value.Errors(schema, values[name])][0];
      byName.set(name, schema.anyOf ? `must be one of ${schema.anyOf.map((c) => c.const).join(', ')}` : (first?.message ?? 'invalid'));
    }
    if (byName.size === 0)
      for (const e of Value.Errors(EnvSchema, withDefaults)) byName.set(e.instancePath.replace(/^\//, '') || 'environment', e.message);
    const problems = [...byName].map(([name, message]) => `${name}: ${message}`).join('; ');
    throw new ConfigError(`Invalid configuration: ${problems}`);
  }
  const parsed = withDefaults as Env;
  try {
    trustedProxies(parsed.TRUST_PROXY);
  } catch (err) {
    throw new ConfigError(`Invalid configuration: TRUST_PROXY: ${(err as Error).message}`);
  }
  const s3Missing = (['BACKUP_S3_BUCKET', 'BACKUP_S3_ACCESS_KEY_ID', 'BACKUP_S3_SECRET_ACCESS_KEY'] as const).filter((k) => !parsed[k]);
  if (parsed.BACKUP_S3_ENDPOINT && s3Missing.length)
    throw new ConfigError(
      `Invalid configuration: BACKUP_S3_ENDPOINT is set but ${s3Missing.join(', ')} ${s3Missing.length > 1 ? 'are' : 'is'} not`,
    );
  // CloudNativePG's barman-cloud (botocore) addresses any store given by endpoint URL path-style, and has no field to change it.
  if (parsed.RUNTIME === 'kubernetes' && parsed.BACKUP_S3_ENDPOINT && !parsed.BACKUP_S3_FORCE_PATH_STYLE)
    throw new ConfigError(
      'Invalid configuration: BACKUP_S3_FORCE_PATH_STYLE=false cannot be honoured with RUNTIME=kubernetes: CloudNativePG ' +
        '(barman-cloud) always addresses the store at BACKUP_S3_ENDPOINT path-style (<endpoint>/<bucket>); remove the setting',
    );
  const edge = chooseEdgeDriver(parsed);
  return {
    ...parsed,
    dataDir: resolve(parsed.DATA_DIR),
    ...edge,
    EDGE_PROCESS: parsed.EDGE_PROCESS ?? defaultEdgeProcess(edge.EDGE_DRIVER),
  };
}

/**
 * EDGE_DRIVER unset: HAProxy where it is installed (about nginx's throughput and CPU per request, a third of the
 * built-in edge's CPU; it switches a deployment without a reload: bench/README.md "The edge"), else the built-in edge.
 * HAProxy binds the router ports itself, so it needs them fixed: a port 0 (any free port, tests) keeps the built-in edge.
 */
function chooseEdgeDriver(env: Env): { EDGE_DRIVER: EdgeDriverName; edgeDriverChoice: string } {
  if (env.EDGE_DRIVER) return { EDGE_DRIVER: env.EDGE_DRIVER, edgeDriverChoice: `edge: ${env.EDGE_DRIVER} (EDGE_DRIVER)` };
  const haproxy = findHaproxy();
  if (!haproxy)
    return { EDGE_DRIVER: 'builtin', edgeDriverChoice: 'edge: builtin (default: HAProxy is not installed; apt-get install haproxy)' };
  const anyPort = [env.ROUTER_PORT === 0 && 'ROUTER_PORT=0', env.ROUTER_HTTPS_PORT === 0 && 'ROUTER_HTTPS_PORT=0'].filter(Boolean);
  if (anyPort.length > 0)
    return {
      EDGE_DRIVER: 'builtin',
      edgeDriverChoice: `edge: builtin (default: ${anyPort.join(' and ')} needs the built-in edge; HAProxy at ${haproxy} needs fixed ports)`,
    };
  return { EDGE_DRIVER: 'haproxy', edgeDriverChoice: `edge: haproxy (default: ${haproxy} found)` };
}

/**
 * A proxy that runs as a daemon of its own (HAProxy, nginx) already outlives the control plane and is adopted by the
 * next start, so its driver runs in the control plane; the built-in edge and Caddy's driver (its access-log reader)
 * get a Node process of their own that does.
 */
function defaultEdgeProcess(driver: EdgeDriverName): EdgeProcessMode {
  return driver === 'haproxy' || driver === 'nginx' ? 'in-process' : 'separate';
}

/** Names proxy-addr (Fastify's trustProxy) accepts for address ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * TRUST_PROXY as Fastify's `trustProxy` takes it: `false`, `true`, a number of hops, or the
 * proxies' addresses and CIDRs (the client address is the first one, from the right of
 * X-Forwarded-For, that is not a trusted proxy). Throws on anything else.
 */
export function trustedProxies(value: string): boolean | number | string[] {
  const text = value.trim().toLowerCase();
  if (text === 'false' || text === '0') return false;
  if (text === 'true') return true;
  if (/^\d+$/.test(text)) return Number(text);
  const list = text
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
  for (const entry of list)
    if (!PROXY_RANGE_NAMES.has(entry) && !ipaddr.isValid(entry) && !isCidr(entry))
      throw new Error(`"${entry}" is not false, true, a number of hops, or a proxy address or CIDR`);
  if (list.length === 0) throw new Error('empty');
  return list;
}

function isCidr(text: string): boolean {
  try {
    ipaddr.parseCIDR(text);
    return true;
  } catch {
    return false;
  }
}

export { findHaproxy, findNginx } from './find-binary.js';
