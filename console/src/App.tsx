import { useQueryClient } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { createApi } from './api';
import { ConsoleContext } from './console-context';
import { Link, useRouter } from './router';
import { loadSession, saveSession, type Session } from './session';
import { AccountPicker } from './pages/AccountPicker';
import { KeysPage } from './pages/Keys';
import { PlaygroundPage } from './pages/Playground';
import { ResponseDetailPage } from './pages/ResponseDetail';
import { ResponsesPage } from './pages/Responses';
import { RunsPage } from './pages/Runs';
import { SignInPage } from './pages/SignIn';
import { UsagePage } from './pages/Usage';

const PAGES = [
  { path: '/keys', label: 'API keys' },
  { path: '/usage', label: 'Usage' },
  { path: '/responses', label: 'Responses' },
  { path: '/runs', label: 'Runs' },
  { path: '/playground', label: 'Playground' },
] as const;

export function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const queryClient = useQueryClient();
  const change = (next: Session | null) => {
    saveSession(next);
    // Nothing read as one account may show under another.
    queryClient.clear();
    setSession(next);
  };
  if (!session) return <SignInPage onSignIn={change} />;
  if (session.kind === 'admin' && !session.account) {
    return (
      <AccountPicker
        token={session.token}
        onPick={(account) => change({ ...session, account })}
        onSignOut={() => change(null)}
      />
    );
  }
  return <Shell session={session} onChange={change} />;
}

function Shell(props: { session: Session; onChange(next: Session | null): void }) {
  const { session, onChange } = props;
  const api = useMemo(() => createApi(session), [session]);
  const { path } = useRouter();
  const value = useMemo(() => ({ api, session, signOut: () => onChange(null) }), [api, session, onChange]);
  const responseMatch = /^\/responses\/([^/]+)$/.exec(path);
  let page: React.ReactNode;
  if (responseMatch) page = <ResponseDetailPage id={decodeURIComponent(responseMatch[1]!)} />;
  else if (path === '/usage') page = <UsagePage />;
  else if (path === '/responses') page = <ResponsesPage />;
  else if (path === '/runs') page = <RunsPage />;
  else if (path === '/playground') page = <PlaygroundPage />;
  else page = <KeysPage />;
  const active = PAGES.find((entry) => path === entry.path || path.startsWith(`${entry.path}/`))?.path ?? '/keys';
  return (
    <ConsoleContext.Provider value={value}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <div className="brand">Switchyard</div>
        <nav aria-label="Console">
          <ul>
            {PAGES.map((entry) => (
              <li key={entry.path}>
                <Link to={entry.path} aria-current={active === entry.path ? 'page' : undefined}>
                  {entry.label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div className="who">
          {session.kind === 'admin' && session.account ? (
            <>
              <span className="badge" title={session.account.id}>
                Operator · {session.account.name}
              </span>
              <button type="button" className="link" onClick={() => onChange({ kind: 'admin', token: session.token })}>
                Switch account
              </button>
            </>
          ) : null}
          <button type="button" className="link" onClick={() => onChange(null)}>
            Sign out
          </button>
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        {page}
      </main>
    </ConsoleContext.Provider>
  );
}
