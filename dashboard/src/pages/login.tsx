import { useState } from 'preact/hooks';
import { api, errorText, ok } from '../api.js';
import { ErrorMessage } from '../components/ui.js';

export function LoginPage({ onLogin }: { onLogin: (user: { username: string; email: string }) => void }) {
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
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
      <h1>Slipway</h1>
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
    </main>
  );
}
