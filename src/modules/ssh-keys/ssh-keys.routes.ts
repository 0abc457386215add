import { Type } from 'typebox';
import { commonErrorResponses } from '../../platform/http/schemas.js';
import type { App } from '../../platform/http/types.js';
import { currentUser } from '../../platform/http/principal.js';
import type { SshKeysService } from './ssh-keys.service.js';

const SshKey = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    name: Type.String(),
    fingerprint: Type.String({ description: "OpenSSH's SHA256 fingerprint (what `ssh-keygen -lf KEY.pub` prints)" }),
    public_key: Type.String({ description: 'The key without its comment' }),
    created_at: Type.String({ format: 'date-time' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { $id: 'SshKey' },
);

/** `/v1/users/me/ssh-keys`: the caller's SSH public keys (`git push` over SSH). */
export function sshKeysRoutes(keys: SshKeysService) {
  const tags = ['SSH keys'];
  return async (app: App) => {
    app.get(
      '/users/me/ssh-keys',
      { schema: { tags, summary: 'Your SSH public keys', response: { 200: Type.Array(SshKey), ...commonErrorResponses } } },
      async (request) => keys.list(currentUser(request).id),
    );
    app.post(
      '/users/me/ssh-keys',
      {
        schema: {
          tags,
          summary: 'Register an SSH public key: `git push` over SSH authenticates you with it',
          body: Type.Object(
            {
              public_key: Type.String({ minLength: 1, maxLength: 16384, description: 'The contents of a .pub file' }),
              name: Type.Optional(Type.String({ maxLength: 200, description: "Default: the key's comment" })),
            },
            { additionalProperties: false },
          ),
          response: { 201: SshKey, ...commonErrorResponses },
        },
      },
      async (request, reply) => reply.code(201).send(await keys.add(currentUser(request).id, request.body)),
    );
    app.delete(
      '/users/me/ssh-keys/:key_id',
      {
        schema: {
          tags,
          summary: 'Remove one of your SSH keys',
          params: Type.Object({ key_id: Type.String({ format: 'uuid' }) }),
          response: { 204: Type.Null(), ...commonErrorResponses },
        },
      },
      async (request, reply) => {
        await keys.remove(currentUser(request).id, request.params.key_id);
        return reply.code(204).send(null);
      },
    );
  };
}
