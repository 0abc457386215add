import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { LocationProvider, Route, Router, useLocation } from 'preact-iso';
import { api, ok } from './api.js';
import { LoginPage } from './pages/login.js';
import { OrganizationsPage } from './pages/organizations.js';
import { OrganizationPage } from './pages/organization.js';
import { ProjectPage } from './pages/project.js';
import { ApplicationPage } from './pages/app/layout.js';
import { AccountPage } from './pages/account.js';
import { ScopeConfigPage } from './pages/scope-config.js';
import { CliAuthPage } from './pages/cli-auth.js';
import { HomePage } from './pages/home.js';
import { OrgSectionPage } from './pages/org-sections.js';
import { usePageTitleAndFocus } from './components/page-title.js';

type User = { username: string; email: string };

function Shell() {
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const location = useLocation();
  usePageTitleAndFocus();
  useEffect(() => {
    ok(api.GET('/v1/auth/session'))
      .then((s) => setUser(s.authenticated && s.user ? s.user : null))
      .catch(() => setUser(null));
    const signedOut = () => setUser(null);
    window.addEventListener('slipway:unauthenticated', signedOut);
    return () => window.removeEventListener('slipway:unauthenticated', signedOut);
  }, []);

  if (user === undefined)
    return (
      <p class="muted loading" role="status" aria-busy="true">
        Loading…
      </p>
    );
  if (user === null) return <LoginPage onLogin={(u) => setUser(u)} />;

  const logout = async () => {
    await api.POST('/v1/auth/logout').catch(() => undefined);
    setUser(null);
    location.route('/');
  };
  return (
    <>
      <header class="top">
        <a href="/" class="brand">
          Slipway
        </a>
        <nav aria-label="Main">
          <a href="/">Home</a>
          <a href="/account">Account</a>
        </nav>
        <span class="muted who">{user.username}</span>
        <button type="button" onClick={logout}>
          Log out
        </button>
      </header>
      <main id="content">
        <Router>
          <Route path="/" component={HomePage} />
          <Route path="/orgs" component={OrganizationsPage} />
          <Route path="/orgs/:org/manage/:section" component={OrgSectionPage} />
          <Route path="/account" component={AccountPage} />
          <Route path="/cli-auth" component={CliAuthPage} />
          <Route path="/orgs/:org" component={OrganizationPage} />
          <Route path="/orgs/:org/:project" component={ProjectPage} />
          <Route path="/apps/:org/:project/:app/:tab?" component={ApplicationPage} />
          <Route path="/config/:org" component={ScopeConfigPage} />
          <Route path="/config/:org/teams/:team" component={ScopeConfigPage} />
          <Route path="/config/:org/projects/:project" component={ScopeConfigPage} />
          <Route path="/config/:org/projects/:project/envs/:env" component={ScopeConfigPage} />
          <Route
            default
            component={() => (
              <>
                <h1>Not found</h1>
                <p class="error">No such page.</p>
              </>
            )}
          />
        </Router>
      </main>
    </>
  );
}

render(
  <LocationProvider>
    <Shell />
  </LocationProvider>,
  document.getElementById('app')!,
);
