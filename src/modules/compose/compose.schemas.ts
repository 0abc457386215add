import { Type } from 'typebox';
import { MAX_COMPOSE_BYTES } from './compose-file.js';

export const ProjectIdParams = Type.Object({ project_id: Type.String({ format: 'uuid' }) });

export const ComposeBody = Type.Object(
  {
    compose: Type.String({ minLength: 1, maxLength: MAX_COMPOSE_BYTES, description: 'The Compose file’s text (YAML)' }),
    base_dir: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 1024,
        description: 'Absolute path of the file’s directory on the server: relative build contexts are resolved from it',
      }),
    ),
    environment: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 100,
        description: 'Environment slug add-ons attach in and images deploy to; production when absent',
      }),
    ),
    env_files: Type.Optional(
      Type.Record(Type.String({ maxLength: 1024 }), Type.String({ maxLength: 64 * 1024 }), {
        maxProperties: 50,
        description: 'The env files the Compose file names, as written there → their dotenv text (values are stored as secrets)',
      }),
    ),
  },
  { additionalProperties: false },
);

const PlanItem = Type.Object({
  service: Type.String(),
  resource: Type.Union([
    Type.Literal('addon'),
    Type.Literal('application'),
    Type.Literal('source'),
    Type.Literal('settings'),
    Type.Literal('variables'),
    Type.Literal('attachment'),
    Type.Literal('scale'),
    Type.Literal('volume'),
    Type.Literal('deploy'),
  ]),
  action: Type.Union([Type.Literal('create'), Type.Literal('update'), Type.Literal('unchanged')]),
  detail: Type.String(),
});

const Unmapped = Type.Object({
  service: Type.Union([Type.String(), Type.Null()]),
  key: Type.String(),
  line: Type.Integer({ description: 'line of the file' }),
  reason: Type.String(),
});

const planProperties = {
  project: Type.Object({ id: Type.String(), slug: Type.String(), organization_slug: Type.String() }),
  environment: Type.String(),
  order: Type.Array(Type.String(), { description: 'services in the order they are created and deployed (depends_on)' }),
  items: Type.Array(PlanItem),
  unmapped: Type.Array(Unmapped, { description: 'what the file says that is not imported, and why' }),
  changes: Type.Integer({ description: 'items that are not unchanged' }),
};

export const ComposePlan = Type.Object(planProperties, { $id: 'ComposePlan' });
export const ComposeApplied = Type.Object(
  {
    ...planProperties,
    deployments: Type.Array(Type.Object({ service: Type.String(), application_id: Type.String(), image_id: Type.String() }), {
      description: 'the build-and-deploy (or image deploy) chains started, in order',
    }),
  },
  { $id: 'ComposeApplied' },
);
