import { useEffect, useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage } from '../components/ui.js';

interface SignInMethods {
  password: boolean;
  oidc: Array<{ name: string; display_name: string; start: string }>;
}

/** This page's path and query: where a single sign-on brings the browser back (e.g. /cli-auth?code=…). */
const here = () => `${window.location.pathname}${window.location.search}`;

export function LoginPage({ onLogin }: { onLogin: (user: { username: string; email: string }) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [methods, setMethods] = useState<SignInMethods>({ password: true, oidc: [] });
  useEffect(() => {
    // Plain fetch: the route is newer than the generated client types the lead regenerates.
    fetch('/v1/auth/methods', { credentials: 'same-origin' })
      .then(async (res) => (res.ok ? setMethods((await res.json()) as SignInMethods) : undefined))
      .catch(() => undefined);
  }, []);
  const submit = async (event: Event) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    try {
      const session = await ok(
        api.POST('/v1/auth/login', { body: { email: String(form.get('email')), password: String(form.get('password')) } }),
      );
      if (session.user) onLogin(session.user);
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="content" class="login">
      <h1 data-title="Log in">Slipway</h1>
      {methods.oidc.length > 0 && (
        <nav aria-label="Single sign-on" class="sso">
          {methods.oidc.map((issuer) => (
            // target=_top: a full navigation to the server's route, which the dashboard's router would otherwise take as its own page.
            <a
              class="button"
              key={issuer.name}
              target="_top"
              href={`${issuer.start}?${new URLSearchParams({ return_to: here() }).toString()}`}
            >
              Sign in with {issuer.display_name}
            </a>
          ))}
        </nav>
      )}
      {methods.password && (
        <form onSubmit={submit} aria-label="Log in">
          <label>
            Email
            <input type="email" name="email" required autocomplete="username" autofocus />
          </label>
          <label>
            Password
            <input type="password" name="password" required autocomplete="current-password" />
          </label>
          <button type="submit" disabled={busy}>
            Log in
          </button>
          <ErrorMessage message={error} />
        </form>
      )}
    </main>
  );
}
