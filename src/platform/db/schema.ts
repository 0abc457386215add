import type { ColumnType, Generated } from 'kysely';

/** Timestamps read as Date, written as Date or left to their database default. */
export type Timestamp = ColumnType<Date, Date | string | undefined, Date | string>;
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
}

export interface SessionsTable {
  id: string;
  token_hash: string;
  user_id: string;
  created_at: Timestamp;
  expires_at: Timestamp;
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
}

export interface LoginFailuresTable {
  key: string;
  count: number;
  window_started: Timestamp;
}

export interface OrganizationsTable {
  id: string;
  name: string;
  slug: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface MembershipsTable {
  organization_id: string;
  user_id: string;
  admin: boolean;
  created_at: Timestamp;
}

export interface ProjectsTable {
  id: string;
  organization_id: string;
  name: string;
  slug: string;
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
  privileged: Generated<boolean>;
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
}

export interface ControlPlaneTables {
  users: UsersTable;
  sessions: SessionsTable;
  api_keys: ApiKeysTable;
  login_failures: LoginFailuresTable;
  organizations: OrganizationsTable;
  memberships: MembershipsTable;
  projects: ProjectsTable;
  applications: ApplicationsTable;
  config_vars: ConfigVarsTable;
  environments: EnvironmentsTable;
}

/** Every feature adds its tables here, one interface per migration group. */
export interface Database extends ControlPlaneTables {}
