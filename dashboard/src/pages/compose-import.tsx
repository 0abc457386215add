import { useState } from 'preact/hooks';
import { api, errorText, ok, type Schemas } from '../api.js';
import { ConfirmAction } from '../components/confirm.js';
import { FieldError, invalidProps } from '../components/ui.js';

type Plan = Schemas['ComposePlan'];
type Applied = Schemas['ComposeApplied'];

const MARK = { create: '+', update: '~', unchanged: '=' } as const;

/** A plan as the CLI prints it: `+` created, `~` updated, `=` unchanged, then what is not imported and why. */
function PlanView({ plan }: { plan: Plan }) {
  return (
    <div aria-label="Import plan" role="region">
      <p>
        Plan for {plan.project.organization_slug}/{plan.project.slug} ({plan.environment}), in order: {plan.order.join(', ') || '—'}.{' '}
        {plan.changes === 0 ? 'Nothing would change.' : `${plan.changes} change${plan.changes === 1 ? '' : 's'}.`}
      </p>
      <ul class="plain">
        {plan.items.map((i, n) => (
          <li key={n}>
            <code>{MARK[i.action]}</code> {i.service}: {i.resource} {i.detail}
          </li>
        ))}
      </ul>
      {plan.unmapped.length > 0 && (
        <>
          <h3>Not imported</h3>
          <ul class="plain">
            {plan.unmapped.map((u, n) => (
              <li key={n}>
                <code>!</code> {u.service ? `${u.service}.` : ''}
                {u.key} (line {u.line}): {u.reason}
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}

/**
 * Import a Docker Compose file into the project (docs/compose.md): paste it, see the plan (nothing
 * changes), then apply it after a confirmation; applying starts the deploys of what changed.
 */
export function ComposeImportPanel({ projectId, onApplied }: { projectId: string; onApplied: () => void }) {
  const [text, setText] = useState('');
  const [environment, setEnvironment] = useState('');
  const [plan, setPlan] = useState<Plan | null>(null);
  const [refusal, setRefusal] = useState<string | undefined>(undefined);
  const [applied, setApplied] = useState<Applied | null>(null);
  const body = () => ({ compose: text, ...(environment.trim() ? { environment: environment.trim() } : {}) });
  const params = { params: { path: { project_id: projectId } } };
  return (
    <section class="panel" aria-labelledby="compose-h">
      <h2 id="compose-h">Import a Compose file</h2>
      <form
        aria-label="Compose import"
        onInput={() => {
          setPlan(null);
          setApplied(null);
        }}
        onSubmit={async (e) => {
          e.preventDefault();
          try {
            setPlan(await ok(api.POST('/v1/projects/{project_id}/compose/plan', { ...params, body: body() })));
            setRefusal(undefined);
          } catch (failure) {
            setPlan(null);
            setRefusal(errorText(failure));
          }
        }}
      >
        <label for="compose-text">Compose file (docker-compose.yml)</label>
        <textarea
          id="compose-text"
          name="compose"
          rows={10}
          required
          spellcheck={false}
          value={text}
          onInput={(e) => setText((e.currentTarget as HTMLTextAreaElement).value)}
          {...invalidProps('compose-text', refusal)}
        />
        <FieldError name="compose-text" message={refusal} />
        <p class="muted">
          Files named by <code>env_file</code> and local build contexts are read on your machine: import such a file with{' '}
          <code>slipway compose import</code>.
        </p>
        <div class="inline">
          <input
            name="environment"
            placeholder="production"
            aria-label="Environment (default production)"
            value={environment}
            onInput={(e) => setEnvironment((e.currentTarget as HTMLInputElement).value)}
          />
          <button type="submit">Show the plan</button>
        </div>
      </form>
      {plan && (
        <>
          <PlanView plan={plan} />
          {plan.changes > 0 && (
            <ConfirmAction
              label="Import"
              title="Import the Compose file"
              environment={plan.environment}
              changes={plan.items
                .filter((i) => i.action !== 'unchanged')
                .map((i, n) => ({
                  label: `${n + 1}. ${i.service} ${i.resource}`,
                  from: i.action === 'update' ? 'as it is' : undefined,
                  to: i.detail,
                }))}
              note="Applications and add-ons are created or updated in this order, then what changed is built and deployed."
              run={async () => {
                setApplied(await ok(api.POST('/v1/projects/{project_id}/compose/apply', { ...params, body: body() })));
              }}
              done="Imported."
              onDone={onApplied}
            />
          )}
        </>
      )}
      {applied && (
        <p role="status">
          Imported {applied.changes} change{applied.changes === 1 ? '' : 's'}
          {applied.deployments.length > 0 ? `; deploys started: ${applied.deployments.map((d) => d.service).join(', ')}` : ''}.
        </p>
      )}
    </section>
  );
}
