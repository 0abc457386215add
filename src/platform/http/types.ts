import type { FastifyInstance, FastifyBaseLogger, RawServerDefault, RawRequestDefaultExpression, RawReplyDefaultExpression } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { KeyScope } from '../access/key-scope.js';

export type App = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export interface AuthenticatedUser {
  id: string;
  username: string;
  email: string;
  is_admin: boolean;
}

export interface Principal {
  user: AuthenticatedUser;
  via: 'session' | 'api_key';
  credentialId: string;
  /** A scoped API key's limits (platform/access/key-scope.ts); absent: everything the user can do. */
  scope?: KeyScope;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
    /** Whether the request's credential still names its principal (a key deleted or a session ended since: false). */
    reauthenticate?: () => Promise<boolean>;
  }
  interface FastifyContextConfig {
    /** Reachable without credentials (decisions.md lists which). */
    public?: boolean;
    /** Writes its own audit rows, refusals included (single sign-on's GET steps): the 403 hook leaves it alone. */
    auditsItself?: boolean;
  }
}
