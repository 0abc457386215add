import type { ColumnType, Generated } from 'kysely';
import type { FailureCode } from '../failures.js';

/** Timestamps read as Date, written as Date or left to their database default. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** A timestamp column without a default: every insert gives it. */
export type RequiredTimestamp = ColumnType<Date, Date | string, Date | string>;
export type NullableTimestamp = ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
export type Json<T> = ColumnType<T, string, string>;

export interface UsersTable {
  id: string;
  username: string;
  email: string;
  password_hash: string;
  is_admin: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Migration 0054: when and how (password, oidc) the user last opened a session. */
  last_sign_in_at: NullableTimestamp;
  last_sign_in_method: ColumnType<string | null, string | null | undefined, string | null>;
}

export interface SessionsTable {
  id: string;
  token_hash: string;
  user_id: string;
  created_at: Timestamp;
  expires_at: RequiredTimestamp;
  /** Migration 0046: how the session began (password, oidc, ...), from where, and when it was last used (idle timeout). */
  method: Generated<'password' | 'oidc'>;
  address: ColumnType<string | null, string | null | undefined, string | null>;
  user_agent: ColumnType<string | null, string | null | undefined, string | null>;
  last_seen_at: Timestamp;
}

export interface ApiKeysTable {
  id: string;
  user_id: string;
  name: string;
  token_hash: string;
  token_prefix: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
  expires_at: NullableTimestamp;
  /** Migration 0035: a key's limits (null: not limited at that level) and where it was last used from. */
  kind: Generated<'api_key' | 'deploy_token' | 'cli_login'>;
  organization_id: string | null;
  project_id: string | null;
  application_id: string | null;
  environment_id: string | null;
  actions: string[] | null;
  last_used_address: string | null;
}

/** Migration 0035: each CLI browser-login code approved once. */
export interface CliLoginApprovalsTable {
  code_hash: string;
  user_id: string;
  api_key_id: string | null;
  client: string;
  created_at: Generated<Date>;
}

export interface LoginFailuresTable {
  key: string;
  count: number;
  window_started: RequiredTimestamp;
  /** Migration 0010: when the last failure was counted (the backoff runs from it). */
  last_failed_at: Generated<Date>;
}

/** Migration 0024: an account's successful sign-ins by address (spares its known users the attack limits). */
export interface LoginKnownAddressesTable {
  account: string;
  address: string;
  last_success_at: Generated<Date>;
}

export interface OrganizationsTable {
  id: string;
  name: string;
  slug: string;
  /** Migration 0005: a site administrator's per-organization build timeout (null: the configured default). */
  build_timeout_seconds: ColumnType<number | null, number | null | undefined, number | null>;
  /** Migration 0023: a site administrator's per-organization disk quota in MiB (null: ORG_DISK_QUOTA_MB). */
  disk_quota_mb: ColumnType<number | null, number | null | undefined, number | null>;
  /** Migration 0023: the creating user, whose pipeline budget the organization shares. */
  created_by: ColumnType<string | null, string | null | undefined, string | null>;
  /** Whether its sandboxes may connect out; null: the site's SANDBOX_OUTBOUND. */
  sandbox_outbound: ColumnType<boolean | null, boolean | null | undefined, boolean | null>;
  /** Migration 0046: whether viewers read the logs of protected environments (the owner's choice). */
  viewers_see_protected_logs: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MembershipsTable {
  organization_id: string;
  user_id: string;
  /** Migration 0046: owner, admin, deployer, developer or viewer (platform/access/roles.ts). */
  role: Generated<'owner' | 'admin' | 'deployer' | 'developer' | 'viewer'>;
  /** Derived from the role (owner or admin): never written. */
  admin: ColumnType<boolean, never, never>;
  created_at: Timestamp;
  /** Migration 0054: the issuer whose group claim granted this membership; null when people chose it. */
  sso_issuer_id: ColumnType<string | null, string | null | undefined, string | null>;
}

/** Migration 0046: a member allowed to act, within their role, on one protected environment. */
export interface EnvironmentGrantsTable {
  environment_id: string;
  user_id: string;
  granted_by: string | null;
  created_at: Timestamp;
}

/** Migration 0046: an invitation to an organization with a role; the token only as its hash. */
export interface InvitationsTable {
  id: string;
  organization_id: string;
  email: string;
  role: 'owner' | 'admin' | 'deployer' | 'developer' | 'viewer';
  token_hash: string;
  invited_by: string | null;
  created_at: Timestamp;
  expires_at: RequiredTimestamp;
  accepted_at: NullableTimestamp;
  accepted_by: ColumnType<string | null, string | null | undefined, string | null>;
  revoked_at: NullableTimestamp;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
  /** The owning team (migration 0003), if any. */
  team_id: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type ProcessCounts = Record<string, number>;
export type ProcessPodClasses = Record<string, string>;

export interface ApplicationsTable {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  platform: Generated<string>;
  process_counts: ColumnType<ProcessCounts, string | undefined, string>;
  process_pod_classes: ColumnType<ProcessPodClasses, string | undefined, string>;
  github_repository: string | null;
  github_repository_is_private: Generated<boolean>;
  auto_deploy_branch: string | null;
  subdirectory: string | null;
  github_app_installation_id: ColumnType<number | null, number | null | undefined, number | null>;
  github_environment_name: string | null;
  deployment_timeout: Generated<number>;
  health_check_path: Generated<string>;
  health_check_host: string | null;
  /** Seconds a new web instance may take to answer its health check; null: HEALTH_CHECK_TIMEOUT_SECONDS (migration 0036). */
  health_check_timeout: ColumnType<number | null, number | null | undefined, number | null>;
  /** Seconds new instances must keep running after they are healthy; null: DEPLOY_STABILITY_WINDOW_SECONDS (migration 0036). */
  stability_window: ColumnType<number | null, number | null | undefined, number | null>;
  privileged: Generated<boolean>;
  /** Replaces the web process's command when a release is frozen; null: the image's or Procfile's (migration 0057). */
  start_command: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type ConfigScope = 'organization' | 'team' | 'project' | 'environment' | 'application';

export interface ConfigVarsTable {
  id: string;
  scope: ConfigScope;
  scope_id: string;
  name: string;
  value: string | null;
  value_sealed: string | null;
  secret: boolean;
  buildtime: boolean;
  /** Given to previews of pull requests from forks (migration 0021); nothing else is. */
  previews: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export type EnvironmentType = 'production' | 'staging' | 'development' | 'preview';

export interface EnvironmentsTable {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  env_type: EnvironmentType;
  auto_deploy_branch: string | null;
  protected: Generated<boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** Closed or deleted: kept (records readable) until the retention sweep. */
  deleted_at: NullableTimestamp;
  /** A preview stopped by its project's cap: runs nothing until its pull request changes. */
  stopped_at: NullableTimestamp;
}

export interface ControlPlaneTables {
  users: UsersTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  cli_login_approvals: CliLoginApprovalsTable;
  login_failures: LoginFailuresTable;
  login_known_addresses: LoginKnownAddressesTable;
  organizations: OrganizationsTable;
  memberships: MembershipsTable;
  environment_grants: EnvironmentGrantsTable;
  invitations: InvitationsTable;
  projects: ProjectsTable;
  applications: ApplicationsTable;
  config_vars: ConfigVarsTable;
  environments: EnvironmentsTable;
}

/** Migration 0003: teams and per-environment service settings. */
export interface TeamsTable {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface TeamMembersTable {
  team_id: string;
  organization_id: string;
  user_id: string;
  created_at: Timestamp;
}

export interface EnvironmentServicesTable {
  environment_id: string;
  application_id: string;
  process_counts: ColumnType<ProcessCounts, string | undefined, string>;
  process_pod_classes: ColumnType<ProcessPodClasses, string | undefined, string>;
  updated_at: Timestamp;
}

export interface EnvironmentDeploysTable {
  id: string;
  environment_id: string;
  kind: Generated<'deploy' | 'promote'>;
  source_environment_id: string | null;
  requested_by: string | null;
  status: Generated<'deploying' | 'complete' | 'error'>;
  complete: Generated<boolean>;
  error: Generated<boolean>;
  error_detail: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface EnvironmentDeployServicesTable {
  environment_deploy_id: string;
  application_id: string;
  position: number;
  image_id: string | null;
  release_id: string | null;
  deployment_id: string | null;
  error_detail: string | null;
}

export interface WorkspaceTables {
  teams: TeamsTable;
  team_members: TeamMembersTable;
  environment_services: EnvironmentServicesTable;
  environment_deploys: EnvironmentDeploysTable;
  environment_deploy_services: EnvironmentDeployServicesTable;
}

// Pipeline (migration 0002): images, releases, deployments, runtime instances, metrics, hooks, job bookkeeping.
export type JsonColumn<T> = ColumnType<T, string | undefined, string>;
/** A JSON column without a default: every insert gives it. */
export type RequiredJsonColumn<T> = ColumnType<T, string, string>;
export type NullableJsonColumn<T> = ColumnType<T | null, string | null | undefined, string | null>;
export type ProcessDefinitions = Record<string, { cmd: string; env: Record<string, string> }>;
export interface PipelineStep {
  steps: string[];
  current: number;
  substep?: string;
}
export interface ChangeSet {
  added: string[];
  removed: string[];
  changed: string[];
}
export type BuildStatus = 'building' | 'built' | 'error';
export type DeploymentStatus = 'queued' | 'deploying' | 'complete' | 'error' | 'rolled_back';
export type InstanceState = 'starting' | 'healthy' | 'running' | 'crashed' | 'stopped';

/** Progress columns images and releases share (their stage code in `src/pipeline` works on both). */
export interface BuildRecordColumns {
  id: string;
  application_id: string;
  version: number;
  status: ColumnType<BuildStatus, BuildStatus | undefined, BuildStatus>;
  built: Generated<boolean>;
  error: Generated<boolean>;
  error_detail: string | null;
  /** Why it failed, stable for code and clients (migration 0011). */
  error_code: ColumnType<FailureCode | null, FailureCode | null | undefined, FailureCode | null>;
  log_text: Generated<string>;
  build_step: NullableJsonColumn<PipelineStep>;
  job_id: string | null;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface ImagesTable extends BuildRecordColumns {
  repository_name: string;
  image_id: string | null;
  build_slug: string | null;
  build_ref: string | null;
  commit_sha: string | null;
  dockerfile: string | null;
  procfile: string | null;
  processes: NullableJsonColumn<ProcessDefinitions>;
  image_metadata: NullableJsonColumn<Record<string, unknown>>;
  artifact_path: string | null;
  /** `cron` of the image's slipway.json (migration 0015). */
  cron: NullableJsonColumn<ManifestCronEntry[]>;
  /** When garbage collection removed its artifact and build-storage image (migration 0023). */
  collected_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** The environment the image was built for (migration 0021; null: older images, built for production). */
  environment_id: string | null;
  /** Built for a preview: released only into that preview, never into another environment. */
  built_for_preview: Generated<boolean>;
  /** Built from a `git push` to this server's repository of the application (migration 0041). */
  pushed: Generated<boolean>;
  /** Made from an image reference, pinned by digest (`host/name@sha256:…`), instead of a build (migration 0049). */
  source_image: ColumnType<string | null, string | null | undefined, string | null>;
  /** Pull credentials of `source_image` (`user:password`), sealed with the SecretBox; null for the platform's registry. */
  source_credentials: ColumnType<string | null, string | null | undefined, string | null>;
}

/** An application's git remote on this server (migration 0041). */
export interface GitRemotesTable {
  application_id: string;
  allow_force_push: Generated<boolean>;
  updated_at: Generated<Date>;
}

/** An organization's measured disk use by kind (migration 0023). */
export interface OrganizationDiskUsageTable {
  organization_id: string;
  artifacts_bytes: number;
  images_bytes: number;
  caches_bytes: number;
  logs_bytes: number;
  measured_at: ColumnType<Date, Date | undefined, Date>;
}

export interface ReleasesTable extends BuildRecordColumns {
  environment_id: string;
  /** Its environment's slug, written by PostgreSQL's trigger from `environment_id` (migration 0066). */
  environment_slug: Generated<string>;
  platform: Generated<string>;
  image_ref: string | null;
  configuration: NullableJsonColumn<unknown>;
  configuration_sealed: string | null;
  process_counts: NullableJsonColumn<ProcessCounts>;
  process_pod_classes: NullableJsonColumn<ProcessPodClasses>;
  processes: NullableJsonColumn<ProcessDefinitions>;
  health_check_path: Generated<string>;
  health_check_host: string | null;
  deployment_timeout: Generated<number>;
  image_changes: NullableJsonColumn<ChangeSet>;
  configuration_changes: NullableJsonColumn<ChangeSet>;
  release_metadata: NullableJsonColumn<Record<string, unknown>>;
  commit_sha: string | null;
}

export interface DeploymentsTable {
  id: string;
  application_id: string;
  environment_id: string;
  release_id: string;
  /** Its environment's slug and its release's version, written by PostgreSQL's trigger (migration 0066). */
  environment_slug: Generated<string>;
  release_version: Generated<number>;
  status: ColumnType<DeploymentStatus, DeploymentStatus | undefined, DeploymentStatus>;
  complete: Generated<boolean>;
  error: Generated<boolean>;
  error_detail: string | null;
  error_code: ColumnType<FailureCode | null, FailureCode | null | undefined, FailureCode | null>;
  deploy_metadata: NullableJsonColumn<Record<string, unknown>>;
  deploy_log: Generated<string>;
  deploy_step: NullableJsonColumn<PipelineStep>;
  job_id: string | null;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  created_at: Timestamp;
  updated_at: Timestamp;
  /** A rollback: the release it replaced (migration 0008). */
  rollback_of: Generated<string | null>;
  /** Why it failed, as data (migration 0036): see `DeployDiagnosis` in src/platform/runtime/diagnosis.ts. */
  failure: NullableJsonColumn<Record<string, unknown>>;
}

export interface InstancesTable {
  id: string;
  application_id: string;
  environment_id: string;
  release_id: string | null;
  deployment_id: string | null;
  process_type: string;
  ordinal: number;
  host: string | null;
  port: number | null;
  pid: number | null;
  /** The pid's process start time (migration 0030): with the pid, what a restarted platform re-adopts by. */
  pid_start_ticks: ColumnType<string | null, string | null | undefined, string | null>;
  state: ColumnType<InstanceState, InstanceState | undefined, InstanceState>;
  restart_count: Generated<number>;
  /** Why it last stopped on its own (migration 0006), e.g. `OOM: exceeded 384 MiB of m1.small`. */
  last_exit: string | null;
  /** When it last exited on its own (migration 0036). */
  last_exit_at: ColumnType<Date | null, Date | string | null | undefined, Date | string | null>;
  worker_id: string | null;
  started_at: Timestamp;
  updated_at: Timestamp;
}

export interface MetricSamplesTable {
  application_id: string;
  environment_id: string;
  sampled_at: RequiredTimestamp;
  cpu_usage_m: Generated<number>;
  memory_usage_bytes: Generated<number>;
  pod_count: Generated<number>;
  restart_count: Generated<number>;
  /** The largest share (percent) of its own memory limit an instance used; null without limits (migration 0059). */
  memory_percent_max: number | null;
}

export interface GithubHooksTable {
  id: string;
  event: string;
  delivery_id: string | null;
  repository: string | null;
  ref: string | null;
  after_sha: string | null;
  payload: Json<unknown>;
  triggered: JsonColumn<Array<{ application_id: string; job_id: string | null }>>;
  created_at: Timestamp;
}

export interface WorkersTable {
  id: string;
  hostname: string;
  pid: number;
  started_at: Timestamp;
  heartbeat_at: Timestamp;
  stopped_at: NullableTimestamp;
}

export interface JobRunsTable {
  job_id: string;
  worker_id: string;
  kind: string;
  application_id: string | null;
  data: Json<Record<string, unknown>>;
  started_at: Timestamp;
}

/** Migration 0032: the pipeline's jobs (JobStore), in a table of Slipway's own. */
export interface PipelineJobsTable {
  id: Generated<string>;
  kind: string;
  application_id: string;
  organization_id: string | null;
  owner_id: string | null;
  data: Json<Record<string, unknown>>;
  state: Generated<'created' | 'active' | 'completed' | 'failed'>;
  retry_count: Generated<number>;
  output: ColumnType<unknown, string | null | undefined, string | null>;
  created_on: Timestamp;
  started_on: NullableTimestamp;
  completed_on: NullableTimestamp;
  cancel_requested_at: NullableTimestamp;
}

export interface PipelineTables {
  pipeline_jobs: PipelineJobsTable;
  images: ImagesTable;
  releases: ReleasesTable;
  deployments: DeploymentsTable;
  instances: InstancesTable;
  metric_samples: MetricSamplesTable;
  github_hooks: GithubHooksTable;
  workers: WorkersTable;
  job_runs: JobRunsTable;
  row_counts: RowCountsTable;
  release_versions: ReleaseVersionsTable;
  organization_disk_usage: OrganizationDiskUsageTable;
}

/** Each application's last release version, taken by the statement that inserts a release (migration 0065). */
export interface ReleaseVersionsTable {
  application_id: string;
  last_version: number;
}

/** Exact row totals of an application's lists, kept by triggers (migration 0019). */
export interface RowCountsTable {
  table_name: 'images' | 'releases' | 'deployments';
  application_id: string;
  environment_id: Generated<string>;
  n: ColumnType<number, never, never>;
}

export interface DomainsTable {
  id: string;
  application_id: string;
  environment_id: string;
  hostname: string;
  route_hostname: string;
  verification_token: string;
  verified_at: NullableTimestamp;
  https_redirect: Generated<boolean>;
  hsts: Generated<boolean>;
  certificate_status: Generated<'none' | 'pending' | 'issued' | 'failed'>;
  certificate_error: string | null;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface CertificatesTable {
  hostname: string;
  certificate_pem: string;
  private_key_enc: string;
  not_after: RequiredTimestamp;
  issued_at: Generated<Date>;
}

export interface AcmeChallengesTable {
  token: string;
  key_authorization: string;
  created_at: Generated<Date>;
}

export interface AcmeAccountsTable {
  directory_url: string;
  account_key_enc: string;
  created_at: Generated<Date>;
}

export interface RequestStatsTable {
  application_id: string;
  environment_id: string;
  process_type: string;
  minute: RequiredTimestamp;
  requests: number;
  status_classes: ColumnType<string[], number[], number[]>;
  latency_buckets: ColumnType<string[], number[], number[]>;
  latency_sum_ms: number;
}

/** One upstream of `edge_routes.upstreams` (migration 0016). */
export interface EdgeRouteUpstream {
  instance_id: string;
  host: string;
  port: number;
  ready: boolean;
  application_id: string | null;
  environment_id: string | null;
  process_type: string | null;
}

export interface EdgeRoutesTable {
  hostname: string;
  upstreams: ColumnType<EdgeRouteUpstream[], string, string>;
  version: number;
  updated_at: Generated<Date>;
}

export interface EdgeRouteVersionTable {
  id: Generated<boolean>;
  version: number;
}

export interface EdgeNodesTable {
  id: string;
  hostname: string;
  pid: number;
  drained_version: Generated<number>;
  heartbeat_at: ColumnType<Date, Date | undefined, Date>;
}

/** Request counters summed over minutes (`slipway_request_counts`, migration 0014). */
export interface RequestCounts {
  requests: number;
  classes: number[];
  buckets: number[];
}

/** Guarded rollouts (migration 0014): an application environment's guard settings. */
export interface ApplicationGuardsTable {
  application_id: string;
  environment_id: string;
  window_seconds: number;
  max_error_ratio: number | null;
  max_p95_factor: number | null;
  max_restarts: number | null;
  min_requests: number;
  updated_at: Generated<Date>;
}

export type GuardStatus = 'watching' | 'passed' | 'rolled_back' | 'breached' | 'superseded';

/** One deployment's watch (started by a trigger when a guarded deployment completes). */
export interface DeploymentGuardsTable {
  deployment_id: string;
  application_id: string;
  environment_id: string;
  settings: RequiredJsonColumn<GuardSettings>;
  status: ColumnType<GuardStatus, GuardStatus | undefined, GuardStatus>;
  started_at: Generated<Date>;
  watch_until: Date;
  start_counts: RequiredJsonColumn<RequestCounts>;
  baseline_counts: RequiredJsonColumn<RequestCounts>;
  measures: NullableJsonColumn<GuardMeasures>;
  breach: string | null;
  rollback_deployment_id: string | null;
  checked_at: Date | null;
}

/** What the guard measured over a deployment's window so far. */
export interface GuardMeasures {
  requests: number;
  errors_5xx: number;
  error_ratio: number | null;
  p95_ms: number | null;
  baseline_p95_ms: number | null;
  restarts: number;
}

export interface GuardSettings {
  window_seconds: number;
  max_error_ratio: number | null;
  max_p95_factor: number | null;
  max_restarts: number | null;
  min_requests: number;
}

export interface EdgeTables {
  edge_routes: EdgeRoutesTable;
  edge_route_version: EdgeRouteVersionTable;
  edge_nodes: EdgeNodesTable;
  request_stats: RequestStatsTable;
  application_guards: ApplicationGuardsTable;
  deployment_guards: DeploymentGuardsTable;
  acme_accounts: AcmeAccountsTable;
  domains: DomainsTable;
  certificates: CertificatesTable;
  acme_challenges: AcmeChallengesTable;
}

// Isolation (migration 0006): the sandbox user of each application.
export interface SandboxUidsTable {
  /** One of these two: an application's user, or an add-on's (migration 0039). */
  application_id: string | null;
  addon_id: Generated<string | null>;
  uid: number;
  created_at: Timestamp;
}

/** A repository a site administrator saved for an application (builds may fetch exactly it). */
export interface TrustedSourcesTable {
  application_id: string;
  repository: string;
  approved_by: string | null;
  approved_at: Timestamp;
}

export interface SandboxTables {
  sandbox_uids: SandboxUidsTable;
  trusted_sources: TrustedSourcesTable;
}

// Streams (migration 0008): one-off runs, application log lines, application events.
export type RunStatus = 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out';

/** A command run inside a running instance (migration 0044): opened by a POST, attached once over a WebSocket. */
export interface ExecSessionsTable {
  id: string;
  application_id: string;
  environment_id: string;
  instance_id: string;
  /** `web.1`: the process type and ordinal when it was opened. */
  instance_name: string;
  user_id: string | null;
  /** null: an interactive shell. */
  command: string | null;
  tty: Generated<boolean>;
  created_at: Timestamp;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  exit_code: number | null;
  /** sha256 of the one-use token that attaches the session over SSH (migration 0052); null: attached over the WebSocket. */
  ssh_token_hash: Generated<string | null>;
}

/** Users' SSH public keys (migration 0052): `git push` over the SSH gateway. */
export interface SshKeysTable {
  id: string;
  user_id: string;
  name: string;
  public_key: string;
  fingerprint: string;
  created_at: Timestamp;
  last_used_at: NullableTimestamp;
}

export interface OneOffRunsTable {
  id: string;
  application_id: string;
  environment_id: string;
  release_id: string | null;
  command: string;
  process_type: string;
  status: ColumnType<RunStatus, RunStatus | undefined, RunStatus>;
  exit_code: number | null;
  timeout_seconds: number;
  error_detail: string | null;
  error_code: ColumnType<FailureCode | null, FailureCode | null | undefined, FailureCode | null>;
  log_text: Generated<string>;
  requested_by: string | null;
  job_id: string | null;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  cron_entry_id: ColumnType<string | null, string | null | undefined, string | null>;
  scheduled_for: NullableTimestamp;
}

export interface AppLogLinesTable {
  id: Generated<number>;
  application_id: string;
  environment_id: string;
  instance_id: string;
  process_type: string;
  stream: 'stdout' | 'stderr';
  line: string;
  logged_at: Date;
}

export interface ApplicationEventsTable {
  id: Generated<number>;
  application_id: string;
  kind: string;
  subject_id: string;
  status: string | null;
  data: Json<Record<string, unknown>>;
  at: Generated<Date>;
}

export interface StreamTables {
  one_off_runs: OneOffRunsTable;
  exec_sessions: ExecSessionsTable;
  ssh_keys: SshKeysTable;
  app_log_lines: AppLogLinesTable;
  application_events: ApplicationEventsTable;
}

export interface WebhooksTable {
  id: string;
  organization_id: string;
  project_id: string | null;
  url: string;
  events: string[];
  secret_sealed: string;
  created_by: string | null;
  created_at: Generated<Date>;
}

export interface WebhookOutboxTable {
  id: Generated<number>;
  organization_id: string;
  project_id: string | null;
  event: string;
  data: Json<Record<string, unknown>>;
  occurred_at: Generated<Date>;
}

export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

export interface WebhookDeliveriesTable {
  id: string;
  webhook_id: string;
  event: string;
  payload: Json<Record<string, unknown>>;
  status: ColumnType<WebhookDeliveryStatus, WebhookDeliveryStatus | undefined, WebhookDeliveryStatus>;
  job_id: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

// Autoscaling and scheduled jobs (migration 0015).
export interface ManifestCronEntry {
  name: string;
  schedule: string;
  command: string;
}

export interface AutoscalePoliciesTable {
  id: string;
  application_id: string;
  environment_id: string;
  process_type: string;
  min_count: number;
  max_count: number;
  target_cpu_percent: number | null;
  target_rps: number | null;
  cooldown_seconds: number;
  evaluated_at: NullableTimestamp;
  last_scaled_at: NullableTimestamp;
  requests_minute: NullableTimestamp;
  /** bigint: read as a string. */
  requests_seen: ColumnType<number | null, number | null | undefined, number | null>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface WebhookDeliveryAttemptsTable {
  id: Generated<number>;
  delivery_id: string;
  response_status: number | null;
  error: string | null;
  duration_ms: number;
  attempted_at: Generated<Date>;
}

export type CredentialKind = 'api_key' | 'session' | 'signature' | 'password' | 'oidc' | 'none';

export interface AuditLogTable {
  id: Generated<number>;
  organization_id: string | null;
  actor_user_id: string | null;
  actor_username: string | null;
  credential_kind: CredentialKind;
  credential_id: string | null;
  action: string;
  resource_type: string;
  resource_id: string | null;
  client_address: string | null;
  /** Migration 0024: the socket's peer (the proxy, behind one); `client_address` is derived through the trusted hops. */
  peer_address: Generated<string | null>;
  /** Migration 0024: a refused request (403), not a change. */
  denied: Generated<boolean>;
  request_id: string;
  before: Json<Record<string, unknown>> | null;
  after: Json<Record<string, unknown>> | null;
  at: Generated<Date>;
}

export interface HookAndAuditTables {
  webhooks: WebhooksTable;
  webhook_outbox: WebhookOutboxTable;
  webhook_deliveries: WebhookDeliveriesTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable;
  audit_log: AuditLogTable;
}

export interface ScaleEventsTable {
  id: string;
  application_id: string;
  environment_id: string;
  process_type: string;
  from_count: number;
  to_count: number;
  reason: string;
  metric: Json<Record<string, unknown>>;
  created_at: Generated<Date>;
}

export interface CronEntriesTable {
  id: string;
  application_id: string;
  environment_id: string;
  name: string;
  schedule: string;
  command: string;
  process_type: string | null;
  timeout_seconds: number;
  source: ColumnType<'api' | 'manifest', 'api' | 'manifest' | undefined, 'api' | 'manifest'>;
  next_run_at: NullableTimestamp;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ScheduleTables {
  autoscale_policies: AutoscalePoliciesTable;
  scale_events: ScaleEventsTable;
  cron_entries: CronEntriesTable;
}

/** Every feature adds its tables here, one interface per migration group. */
export interface PreviewSettingsTable {
  project_id: string;
  template_environment_id: string;
  max_concurrent: number;
  copy_secrets: boolean;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

/** A pull request whose head is a fork, or a branch of the project's repository itself. */
export type PreviewTrust = 'fork' | 'same_repository';

export interface PreviewsTable {
  environment_id: string;
  project_id: string;
  pr_number: number;
  repository: string;
  head_sha: string;
  installation_id: number | null;
  source_application_ids: ColumnType<string[], string, string>;
  /** Whose code the preview runs (migration 0021): a fork's gets only variables marked for previews. */
  trust: ColumnType<PreviewTrust, PreviewTrust | undefined, PreviewTrust>;
  /** `owner/name` of the pull request's head repository (null when GitHub no longer knows it). */
  head_repository: string | null;
  active_at: Generated<Date>;
  created_at: Generated<Date>;
}

export interface GithubInstallationsTable {
  installation_id: number;
  account: string | null;
  repository_selection: string | null;
  updated_at: Generated<Date>;
}

/** Which organization a GitHub App installation serves (migration 0022). */
export interface GithubInstallationLinksTable {
  installation_id: number;
  organization_id: string;
  linked_by: string | null;
  linked_via: 'setup' | 'admin';
  linked_at: Generated<Date>;
}

export interface GithubInstallationRepositoriesTable {
  installation_id: number;
  repository: string;
  added_at: Generated<Date>;
}

export interface GithubDeploymentReportsTable {
  image_id: string;
  github_deployment_id: number;
  repository: string;
  created_at: Generated<Date>;
}

export interface PreviewTables {
  preview_settings: PreviewSettingsTable;
  previews: PreviewsTable;
  github_installations: GithubInstallationsTable;
  github_installation_links: GithubInstallationLinksTable;
  github_installation_repositories: GithubInstallationRepositoriesTable;
  github_deployment_reports: GithubDeploymentReportsTable;
}

export interface Database
  extends
    ControlPlaneTables,
    WorkspaceTables,
    PipelineTables,
    StreamTables,
    SandboxTables,
    EdgeTables,
    HookAndAuditTables,
    PreviewTables,
    ScheduleTables,
    AddonTables {
  git_remotes: GitRemotesTable;
  notification_channels: NotificationChannelsTable;
  notification_deliveries: NotificationDeliveriesTable;
  notification_delivery_attempts: WebhookDeliveryAttemptsTable;
  log_drains: LogDrainsTable;
  environment_maintenance: EnvironmentMaintenanceTable;
  oidc_issuers: OidcIssuersTable;
  oidc_group_mappings: OidcGroupMappingsTable;
  oidc_identities: OidcIdentitiesTable;
  oidc_sign_ins: OidcSignInsTable;
  alert_rules: AlertRulesTable;
  alert_transitions: AlertTransitionsTable;
  alert_log_matches: AlertLogMatchesTable;
  threshold_crossings: ThresholdCrossingsTable;
}

/** Alert rules (migration 0055): a threshold over what the platform measures, judged by the `alerts` job. */
export interface AlertRulesTable {
  id: string;
  organization_id: string;
  application_id: string | null;
  environment_id: string | null;
  name: string;
  metric: 'error_rate' | 'p95_latency_ms' | 'restarts' | 'memory_percent' | 'log_matches';
  threshold: number;
  window_seconds: number;
  for_seconds: Generated<number>;
  min_requests: Generated<number>;
  state: Generated<'ok' | 'pending' | 'firing' | 'resolved'>;
  state_since: Generated<Date>;
  last_value: number | null;
  evaluated_at: Date | null;
  counters_from: Date | null;
  counters: NullableJsonColumn<{ requests: number; errors: number; buckets: number[]; restarts: number; matches?: number }>;
  samples: JsonColumn<Array<{ at: number; requests: number; errors: number; buckets: number[]; restarts: number; matches?: number }>>;
  silenced_until: Date | null;
  /** `log_matches` rules (migration 0059): the substring counted, and whether case is ignored. */
  pattern: string | null;
  ignore_case: Generated<boolean>;
  created_by: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface AlertTransitionsTable {
  id: Generated<number>;
  rule_id: string;
  from_state: string;
  to_state: string;
  value: number | null;
  notified: boolean;
  at: Generated<Date>;
}

/** Lines a `log_matches` rule matched since it was made (migration 0059). */
export interface AlertLogMatchesTable {
  rule_id: string;
  matches: number;
}

/** A threshold crossed by a watched measure (a certificate's days left, a quota's use): published once (migration 0055). */
export interface ThresholdCrossingsTable {
  organization_id: string;
  subject: string;
  level: number;
  crossed_at: Generated<Date>;
}

/** Single sign-on (migration 0047). */
export interface OidcIssuersTable {
  id: Generated<string>;
  name: string;
  display_name: string;
  discovery_url: string;
  client_id: string;
  client_secret_sealed: string;
  allowed_email_domains: Generated<string[]>;
  group_claim: string | null;
  extra_scopes: Generated<string[]>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface OidcGroupMappingsTable {
  id: Generated<string>;
  issuer_id: string;
  group_value: string;
  organization_id: string;
  role: string;
  created_at: Generated<Date>;
}

export interface OidcIdentitiesTable {
  issuer_id: string;
  subject: string;
  user_id: string;
  created_at: Generated<Date>;
  last_sign_in_at: Generated<Date>;
}

export interface OidcSignInsTable {
  state_hash: string;
  issuer_id: string;
  nonce: string;
  code_verifier_sealed: string;
  return_to: string;
  expires_at: Date;
}

/** Slack and Discord channels of an organization (migration 0043). */
export interface NotificationChannelsTable {
  id: string;
  organization_id: string;
  kind: 'slack' | 'discord' | 'email';
  name: string;
  url_sealed: string;
  url_hint: string;
  events: string[];
  environments: string[] | null;
  created_by: string | null;
  created_at: Generated<Date>;
}

/** Log drains of an organization or one application (migration 0048). */
export type LogDrainKind = 'syslog' | 'https' | 'otlp';
export type LogDrainSource = 'runtime' | 'build' | 'deploy';
export interface LogDrainsTable {
  id: string;
  organization_id: string;
  application_id: string | null;
  kind: LogDrainKind;
  name: string;
  url_sealed: string;
  url_hint: string;
  secret_sealed: string | null;
  ca_pem: string | null;
  sources: LogDrainSource[];
  lines_sent: Generated<number>;
  lines_dropped: Generated<number>;
  failed_sends: Generated<number>;
  last_error: string | null;
  last_error_at: Date | null;
  last_sent_at: Date | null;
  created_by: string | null;
  created_at: Generated<Date>;
}

export interface NotificationDeliveriesTable extends Omit<WebhookDeliveriesTable, 'webhook_id'> {
  channel_id: string;
}

// Add-ons (migration 0039): Postgres and Redis servers attached to application environments.
export type AddonKind = 'postgres' | 'redis';
export type AddonStatus = 'creating' | 'running' | 'failed' | 'stopped' | 'deleted';

/** A persistent volume (migration 0053): mounted at `mount_path` in `process_type`'s instance. */
export interface VolumesTable {
  id: string;
  organization_id: string;
  /** Null once the application (or environment) was deleted: the volume and its data stay until deleted. */
  application_id: string | null;
  environment_id: string | null;
  name: string;
  mount_path: string;
  process_type: string;
  size_mib: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface AddonsTable {
  id: string;
  organization_id: string;
  name: string;
  kind: AddonKind;
  plan: string;
  port: number;
  credentials_sealed: string;
  status: Generated<AddonStatus>;
  status_detail: string | null;
  pid: number | null;
  start_ticks: string | null;
  deleted_at: Date | null;
  purge_after: Date | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
  /** A fork's origin, e.g. "db at 2026-11-26T01:02:03Z" (migration 0050). */
  restored_from: string | null;
  last_drill: NullableJsonColumn<AddonDrillResult>;
  last_proven_restorable_at: Date | null;
  /** A restore drill's own check query (migration 0058): run read-only on the restored copy. */
  drill_check_query: string | null;
  /** Where it is reached: its Service's DNS name on Kubernetes; null: loopback (migration 0060). */
  host: string | null;
}

/** A restore drill's outcome (migration 0050). */
export interface AddonDrillResult {
  ok: boolean;
  at: string;
  duration_ms: number;
  backup_id: string | null;
  detail: string | null;
  /** Rows per table of the restored copy, "database.schema.table". */
  tables: Record<string, number>;
  /** The add-on's check query's answer on the restored copy (absent: none was set). */
  check?: { query: string; rows: number | null; first_value: string | null } | null;
}

export interface AddonBackupsTable {
  id: string;
  addon_id: string;
  status: Generated<'running' | 'completed' | 'failed'>;
  trigger: 'manual' | 'scheduled';
  start_wal: string | null;
  size_bytes: ColumnType<number | null, number | null | undefined, number | null>;
  /** Where the backup is kept (migration 0062): the add-on's local repository or the S3-compatible store. */
  location: Generated<'local' | 's3'>;
  detail: string | null;
  started_at: Generated<Date>;
  finished_at: Date | null;
}

export interface AddonAttachmentsTable {
  id: string;
  addon_id: string;
  application_id: string;
  environment_id: string;
  variable: string;
  created_at: Generated<Date>;
}

export interface AddonTables {
  addons: AddonsTable;
  volumes: VolumesTable;
  addon_attachments: AddonAttachmentsTable;
  addon_backups: AddonBackupsTable;
  compose_imports: ComposeImportsTable;
}

/** Which application or add-on each service of a project's imported Compose file became (migration 0056). */
export interface ComposeImportsTable {
  project_id: string;
  service: string;
  application_id: string | null;
  addon_id: string | null;
  image: string | null;
  imported_at: Generated<Date>;
}

/** An environment in maintenance (migration 0042): the edge answers its applications' requests with a 503 page. */
export interface EnvironmentMaintenanceTable {
  environment_id: string;
  message: string | null;
  retry_after: number;
  enabled_by: string | null;
  enabled_at: Generated<Date>;
}
