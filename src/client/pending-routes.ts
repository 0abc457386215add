/**
 * Routes agreed with the server side (logs, runs, rollback) that the API document does not
 * describe yet. Once the server serves them, `npm run client:types` puts them in
 * api-types.ts and this file goes: delete it and the intersection in api.ts.
 */
type Json<T> = { headers: { [name: string]: unknown }; content: { 'application/json': T } };
type ErrorBody = Json<{ status: number; message: string }>;
type Errors = { 400: ErrorBody; 401: ErrorBody; 403: ErrorBody; 404: ErrorBody; 409: ErrorBody; 422: ErrorBody };
type NoParams = { query?: never; header?: never; path?: never; cookie?: never };

export interface LogEntry { id: string; timestamp: string; process_type: string; instance_id: string; stream: string; line: string }
export interface RunRecord {
  id: string; application_id: string; command: string; process_type: string | null;
  status: 'pending' | 'running' | 'succeeded' | 'failed' | 'timed_out'; exit_code: number | null;
}
export interface RollbackDeployment {
  id: string; application_id: string; environment_id: string; release: { id: string; version: number; commit_sha: string | null };
  status: 'deploying' | 'complete' | 'error'; error_detail: string | null; is_rollback: boolean; rollback_of: string | null;
}

export interface PendingPaths {
  '/v1/applications/{application_id}/logs': {
    parameters: NoParams;
    get: {
      parameters: { query?: { since?: string; until?: string; process?: string; search?: string; limit?: number }; header?: never; path: { application_id: string }; cookie?: never };
      requestBody?: never;
      responses: { 200: Json<{ items: LogEntry[] }> } & Errors;
    };
  };
  '/v1/applications/{application_id}/runs': {
    parameters: NoParams;
    post: {
      parameters: { query?: never; header?: never; path: { application_id: string }; cookie?: never };
      requestBody: { content: { 'application/json': { command: string; process_type?: string; environment?: string; timeout_seconds?: number } } };
      responses: { 202: Json<RunRecord> } & Errors;
    };
  };
  '/v1/applications/{application_id}/rollback': {
    parameters: NoParams;
    post: {
      parameters: { query?: never; header?: never; path: { application_id: string }; cookie?: never };
      requestBody: { content: { 'application/json': { release_id?: string; environment?: string } } };
      responses: { 202: Json<RollbackDeployment> } & Errors;
    };
  };
}
