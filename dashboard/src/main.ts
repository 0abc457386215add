// The dashboard talks only to the public API on its own origin; the session cookie authenticates it.

interface ApiError {
  status: number;
  message: string;
}
interface Organization {
  id: string;
  name: string;
  slug?: string;
}

const root = document.getElementById('app') as HTMLElement;

async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`/v1${path}`, {
    method,
    credentials: 'same-origin',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const payload = response.status === 204 ? undefined : await response.json();
  if (!response.ok) throw payload as ApiError;
  return payload as T;
}

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Record<string, unknown> = {},
  ...children: (Node | string)[]
): HTMLElementTagNameMap[K] {
  const node: HTMLElementTagNameMap[K] = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function show(...nodes: Node[]): void {
  root.replaceChildren(...nodes);
}

function renderLogin(): void {
  const email = element('input', { type: 'email', name: 'email', required: true, autocomplete: 'username' });
  const password = element('input', { type: 'password', name: 'password', required: true, autocomplete: 'current-password' });
  const error = element('p', { className: 'error', role: 'alert' });
  const form = element(
    'form',
    {},
    element('label', {}, 'Email ', email),
    element('label', {}, 'Password ', password),
    element('button', { type: 'submit' }, 'Log in'),
    error,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    api('POST', '/auth/login', { email: email.value, password: password.value })
      .then(() => renderOrganizations())
      .catch((failure: ApiError) => {
        error.textContent = failure.message ?? 'Login failed';
      });
  });
  show(element('h1', {}, 'Slipway'), form);
  email.focus();
}

async function renderOrganizations(): Promise<void> {
  show(element('p', { className: 'muted' }, 'Loading organizations…'));
  try {
    const page = await api<{ items?: Organization[] } | Organization[]>('GET', '/organizations');
    const organizations = Array.isArray(page) ? page : (page.items ?? []);
    const logout = element('button', { type: 'button' }, 'Log out');
    logout.addEventListener('click', () => {
      void api('POST', '/auth/logout').finally(renderLogin);
    });
    const list =
      organizations.length === 0
        ? element('p', { className: 'muted' }, 'No organizations yet.')
        : element('ul', {}, ...organizations.map((org) => element('li', {}, org.name)));
    show(element('h1', {}, 'Organizations'), list, logout);
  } catch (failure) {
    show(element('p', { className: 'error', role: 'alert' }, (failure as ApiError).message ?? 'Could not load organizations'));
  }
}

api<{ authenticated: boolean }>('GET', '/auth/session')
  .then((session) => (session.authenticated ? renderOrganizations() : renderLogin()))
  .catch(() => renderLogin());
