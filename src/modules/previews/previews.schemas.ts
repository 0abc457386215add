import { Type } from 'typebox';
import { Slug, Timestamp } from '../../platform/http/schemas.js';

export const PreviewProjectParams = Type.Object({ workspace: Slug, project: Slug });

export const PreviewSettingsBody = Type.Object(
  {
    template_environment: Type.String({
      minLength: 1,
      maxLength: 100,
      description: 'slug of the environment whose configuration and process settings each preview starts from',
    }),
    max_concurrent: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description: 'running previews at most; past it the least recently active one stops (default 5)',
      }),
    ),
    copy_secrets: Type.Optional(
      Type.Boolean({
        description:
          "copy the template's secret values into previews of same-repository pull requests (default false; organization admins " +
          'only); previews of forks never get a variable not marked `previews: true`',
      }),
    ),
  },
  { additionalProperties: false, $id: 'PreviewSettingsBody' },
);

export const PreviewSettings = Type.Object(
  {
    enabled: Type.Boolean(),
    template_environment: Type.Union([Type.String(), Type.Null()]),
    max_concurrent: Type.Union([Type.Integer(), Type.Null()]),
    copy_secrets: Type.Boolean(),
  },
  { $id: 'PreviewSettings' },
);

export const Preview = Type.Object(
  {
    environment: Type.String({ description: 'pr-<number>' }),
    pr_number: Type.Integer(),
    repository: Type.String(),
    head_sha: Type.String(),
    head_repository: Type.Union([Type.String(), Type.Null()], {
      description: "the repository of the pull request's head (owner/name); null when GitHub no longer knows it",
    }),
    trust: Type.Union([Type.Literal('fork'), Type.Literal('same_repository')], {
      description: "whose code the preview runs: a fork's (anyone on GitHub), or a branch of the project's repository itself",
    }),
    configuration: Type.Union([Type.Literal('marked_for_previews_only'), Type.Literal('all')], {
      description:
        "the rule its builds and instances were given configuration by: a fork's preview gets only the variables marked " +
        '`previews: true` (at any scope; secrets included only when so marked); a same-repository preview gets the ' +
        "template's variables (its secrets only with copy_secrets) and every other scope's, as any environment",
    }),
    stopped: Type.Boolean({ description: 'stopped by the cap; a new push to the pull request starts it again' }),
    active: Timestamp,
    created: Timestamp,
    urls: Type.Record(Type.String(), Type.String(), { description: 'per service slug, the URL its preview answers at' }),
  },
  { $id: 'Preview' },
);

export const ProjectPreviews = Type.Object({ settings: PreviewSettings, previews: Type.Array(Preview) }, { $id: 'ProjectPreviews' });
