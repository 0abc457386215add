/**
 * What each API route needs of a scoped API key: the one table the key-scope check reads
 * (key-scope.ts). A route matches the first rule naming its method and path; a GET nothing
 * names is a `read`, any other method nothing names is `manage` (a new write route is closed
 * to narrow keys until it is listed). `unscoped` routes act on the caller's account, the
 * whole site or create organizations: only a session or a key without limits reaches them,
 * so a scoped key can never mint a wider key.
 */

/** The actions a key may be limited to (api_keys.actions; migration 0035 lists the same words). */
export const KEY_ACTIONS = ['read', 'deploy', 'config:write', 'scale', 'run', 'manage'] as const;
export type KeyAction = (typeof KEY_ACTIONS)[number];

/**
 * What a route needs: any one of these actions, or a credential without limits (`unscoped`), or
 * that or the key acting on itself (`own-key`: revoking the key that calls, as `slipway logout` does).
 */
export type RouteNeed = { anyOf: readonly KeyAction[] } | 'unscoped' | 'own-key';

export const ACTION_MEANINGS: Record<KeyAction, string> = {
  read: 'every GET of what the key reaches (configuration values stay masked as for any member)',
  deploy: 'build, release, deploy, roll back and promote, and follow those records and their logs',
  'config:write': 'create, change and delete configuration variables at any scope the key reaches',
  scale: 'process counts and pod classes, autoscaling policies',
  run: 'one-off runs, cron entries and commands inside running instances (exec)',
  manage:
    'every other change: applications, projects, environments, settings, domains, guards, previews, members, teams, webhooks, GitHub links',
};

type Rule = { methods: 'GET' | 'WRITE' | 'ANY'; path: RegExp; need: RouteNeed };

const any = (...actions: KeyAction[]): RouteNeed => ({ anyOf: actions });

const RULES: Rule[] = [
  { methods: 'WRITE', path: /^\/v1\/auth\/api-keys\/:id$/, need: 'own-key' },
  // The caller's own credentials and account, the site's users and audit log, new organizations.
  { methods: 'ANY', path: /^\/v1\/auth\/(api-keys|cli-logins|logout)(\/|$)/, need: 'unscoped' },
  { methods: 'ANY', path: /^\/v1\/users(\/|$)/, need: 'unscoped' },
  { methods: 'ANY', path: /^\/v1\/audit-log$/, need: 'unscoped' },
  { methods: 'ANY', path: /^\/v1\/invitations\//, need: 'unscoped' },
  // A user's own SSH keys act as the whole user (git push over SSH): no scoped key manages them.
  { methods: 'ANY', path: /^\/v1\/users\/me\/ssh-keys(\/|$)/, need: 'unscoped' },
  { methods: 'WRITE', path: /^\/v1\/(organizations|workspaces)$/, need: 'unscoped' },
  // GitHub's redirect after installing the App links an installation: a change, whatever its method.
  { methods: 'GET', path: /^\/v1\/integrations\/github\/setup$/, need: any('manage') },

  // Deploying, and following what a deploy started (a CI job watches its build and deployment).
  { methods: 'WRITE', path: /\/(deploy|rollback|promote)$/, need: any('deploy') },
  { methods: 'WRITE', path: /^\/v1\/images\/[^/]+\/build$/, need: any('deploy') },
  { methods: 'WRITE', path: /^\/v1\/releases\/[^/]+\/create$/, need: any('deploy') },
  { methods: 'WRITE', path: /\/builds\/trigger$|\/pipeline\/(deploy|rollback)$/, need: any('deploy') },
  { methods: 'GET', path: /^\/v1\/(images|releases|deployments)\//, need: any('read', 'deploy') },
  { methods: 'GET', path: /\/envs\/[^/]+\/deploys(\/|$)/, need: any('read', 'deploy') },
  {
    methods: 'GET',
    path: /^\/v1\/applications\/[^/]+\/(deployments|pipeline-status|pipeline-metrics)$/,
    need: any('read', 'deploy'),
  },
  // The CLI finds the application it deploys by its slugs.
  { methods: 'GET', path: /^\/v1\/applications\/:org_slug\/:project_slug\/:app_slug$/, need: any('read', 'deploy') },

  { methods: 'WRITE', path: /^\/v1\/configurations\/|\/config(\/|$)/, need: any('config:write') },
  { methods: 'WRITE', path: /\/(scale|autoscaling)(\/|$)/, need: any('scale') },
  { methods: 'WRITE', path: /\/(runs|cron)(\/|$)/, need: any('run') },
  // A command inside a running instance: opening it, and attaching its WebSocket (a GET).
  {
    methods: 'ANY',
    path: /\/instances\/:instance\/exec$|\/:application_id\/exec$|\/services\/:service\/exec$|^\/v1\/exec-sessions\//,
    need: any('run'),
  },
];

/** What the route `method url` needs; `url` is Fastify's pattern with its parameter names (`/v1/applications/:application_id/deploy`). */
export function routeNeed(method: string, url: string): RouteNeed {
  const read = method === 'GET' || method === 'HEAD';
  for (const rule of RULES) {
    if (rule.methods === 'GET' && !read) continue;
    if (rule.methods === 'WRITE' && read) continue;
    if (rule.path.test(url)) return rule.need;
  }
  return read ? any('read') : any('manage');
}

/**
 * What a route needs of the caller's role beyond its action (roles.ts): a minimum role, or a
 * site administrator. `exceptSelf`: a member acting on their own membership (leaving) needs none.
 */
export interface RoleRule {
  minimum?: 'admin' | 'owner';
  siteAdmin?: boolean;
  exceptSelf?: boolean;
}

const ORG = String.raw`\/v1\/(organizations\/:org_slug|workspaces\/:workspace)`;
const ROLE_RULES: Array<{ methods: readonly string[]; path: RegExp; rule: RoleRule }> = [
  { methods: ['GET', 'PUT'], path: /^\/v1\/organizations\/:org_slug\/pipeline-limits$/, rule: { siteAdmin: true } },
  // `/users/me/…` is the caller's own account (their sessions); the rest of `/users` is the site's.
  {
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    path: /^\/v1\/(users(?!\/me(\/|$))|audit-log|sso\/issuers)(\/|$)/,
    rule: { siteAdmin: true },
  },
  { methods: ['DELETE'], path: new RegExp(`^${ORG}$`), rule: { minimum: 'owner' } },
  { methods: ['PUT', 'PATCH'], path: new RegExp(`^${ORG}/access-settings$`), rule: { minimum: 'owner' } },
  { methods: ['PUT', 'PATCH'], path: new RegExp(`^${ORG}$`), rule: { minimum: 'admin' } },
  { methods: ['DELETE'], path: new RegExp(`^${ORG}/members/:user_id$`), rule: { minimum: 'admin', exceptSelf: true } },
  {
    methods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    path: new RegExp(`^${ORG}/(members|invitations|grants)(/|$)`),
    rule: { minimum: 'admin' },
  },
  { methods: ['GET'], path: new RegExp(`^${ORG}/(invitations|sign-ins)$`), rule: { minimum: 'admin' } },
  // The organization's audit log, its webhooks, notification channels and log drains (their targets carry secrets), alert rules.
  {
    methods: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    path: new RegExp(`^${ORG}/(audit-log|webhooks|notification-channels|log-drains|alert-rules)(/|$)`),
    rule: { minimum: 'admin' },
  },
];

/** The role rule of `method url`, if any (the first that matches). */
export function routeRoleRule(method: string, url: string): RoleRule | null {
  const verb = method === 'HEAD' ? 'GET' : method;
  return ROLE_RULES.find((r) => r.methods.includes(verb) && r.path.test(url))?.rule ?? null;
}

/** Reads of build, release, deployment, run and application logs: what a viewer may be kept from in protected environments. */
export function isLogRead(method: string, url: string): boolean {
  return (method === 'GET' || method === 'HEAD') && /\/logs?(\/stream)?$/.test(url);
}

export function describeNeed(need: RouteNeed): string {
  return typeof need === 'string' ? 'a credential without limits' : need.anyOf.map((a) => `'${a}'`).join(' or ');
}
