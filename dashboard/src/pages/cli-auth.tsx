import { useEffect, useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage } from '../components/ui.js';

const ACTIONS = [
  { id: 'read', label: 'Read everything the key reaches' },
  { id: 'deploy', label: 'Deploy, roll back and promote' },
  { id: 'config:write', label: 'Change configuration variables' },
  { id: 'scale', label: 'Scale processes' },
  { id: 'run', label: 'Run one-off commands and cron entries' },
  { id: 'manage', label: 'Every other change (applications, members, settings…)' },
] as const;
type Action = (typeof ACTIONS)[number]['id'];

/**
 * `/cli-auth?code=XXXX-XXXX&port=N[&client=name]`: a command-line client (Ancla's `login`, or
 * `slipway login --browser`) waits on 127.0.0.1:N for a key. The signed-in user sees the code
 * the terminal shows, chooses what the key may do, and approves; the server makes the key and
 * names the CLI's loopback callback, where the browser goes next. Nothing is approved by merely
 * opening the page.
 */
export function CliAuthPage() {
  const query = new URLSearchParams(window.location.search);
  const code = query.get('code') ?? '';
  const port = Number(query.get('port'));
  const client = (query.get('client') ?? '').slice(0, 64) || 'A command-line client';
  const valid = /^[A-Za-z0-9-]{4,64}$/.test(code) && Number.isInteger(port) && port >= 1024 && port <= 65535;

  const [orgs, setOrgs] = useState<Array<{ slug: string; name: string }>>([]);
  const [organization, setOrganization] = useState('');
  const [actions, setActions] = useState<Set<Action>>(new Set(['read', 'deploy']));
  const [state, setState] = useState<'asking' | 'busy' | 'approved' | 'refused'>('asking');
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    ok(api.GET('/v1/organizations'))
      .then((list) => setOrgs(list.map((o) => ({ slug: o.slug, name: o.name }))))
      .catch(() => setOrgs([]));
  }, []);

  if (!valid)
    return (
      <section class="panel">
        <h1>Command-line login</h1>
        <p class="error" role="alert">
          This login link is incomplete: start the login again from your terminal.
        </p>
      </section>
    );

  const toggle = (action: Action) => {
    const next = new Set(actions);
    if (next.has(action)) next.delete(action);
    else next.add(action);
    setActions(next);
  };

  const approve = async (event: Event) => {
    event.preventDefault();
    setState('busy');
    setError(null);
    try {
      const approved = await ok(
        api.POST('/v1/auth/cli-logins', {
          body: {
            code,
            port,
            client,
            actions: [...actions],
            ...(organization ? { organization } : {}),
          },
        }),
      );
      setState('approved');
      // The key travels only to the CLI's own loopback listener, which checks the code.
      window.location.assign(approved.callback);
    } catch (e) {
      setError(errorText(e));
      setState('asking');
    }
  };

  if (state === 'refused')
    return (
      <section class="panel">
        <h1>Command-line login refused</h1>
        <p>No key was made. You can close this tab.</p>
      </section>
    );
  if (state === 'approved')
    return (
      <section class="panel">
        <h1>Command-line login approved</h1>
        <p>Handing the key to your terminal… You can close this tab once it says it is logged in.</p>
      </section>
    );

  return (
    <section class="panel">
      <h1>Approve a command-line login</h1>
      <p>
        <strong>{client}</strong> asks for an API key. Approve only if your terminal shows this code:
      </p>
      <p class="code" aria-label="Confirmation code">
        {code}
      </p>
      <form onSubmit={approve} aria-label="Approve the command-line login">
        <label>
          Organizations
          <select value={organization} onChange={(e) => setOrganization((e.currentTarget as HTMLSelectElement).value)}>
            <option value="">All my organizations</option>
            {orgs.map((o) => (
              <option value={o.slug} key={o.slug}>
                {o.name}
              </option>
            ))}
          </select>
        </label>
        <fieldset>
          <legend>The key may</legend>
          {ACTIONS.map((a) => (
            <label key={a.id} class="check">
              <input type="checkbox" checked={actions.has(a.id)} onChange={() => toggle(a.id)} /> {a.label}
            </label>
          ))}
        </fieldset>
        <button type="submit" disabled={state === 'busy' || actions.size === 0}>
          Approve
        </button>{' '}
        <button type="button" onClick={() => setState('refused')}>
          Refuse
        </button>
        <ErrorMessage message={error} />
      </form>
    </section>
  );
}
