import { useState, type FormEvent } from 'react';
import { adminGet, createApi } from '../api';
import { ErrorNote, Field } from '../components/ui';
import type { Session } from '../session';

/**
 * Sign-in with an API key (full access to its account) or, for operators, the admin token. The secret is checked
 * against the service before it is kept, and kept only in this tab's sessionStorage.
 */
export function SignInPage(props: { onSignIn(session: Session): void }) {
  const [mode, setMode] = useState<'key' | 'admin'>('key');
  const [secret, setSecret] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = secret.trim();
    if (!value) return setError(new Error(mode === 'key' ? 'Enter an API key.' : 'Enter the admin token.'));
    setBusy(true);
    setError(null);
    try {
      if (mode === 'key') {
        const session: Session = { kind: 'key', key: value };
        await createApi(session).get('/v2/organization/balance');
        props.onSignIn(session);
      } else {
        await adminGet(value, '/admin/accounts', { limit: 1 });
        props.onSignIn({ kind: 'admin', token: value });
      }
    } catch (failure) {
      setError(failure);
      setBusy(false);
    }
  };

  return (
    <main id="main" className="signin">
      <h1>Switchyard console</h1>
      <p className="muted">
        Sign in with an API key of your account. Operators sign in with the admin token and then pick an account.
      </p>
      <form onSubmit={submit} aria-label="Sign in">
        <fieldset>
          <legend>Sign in with</legend>
          <label className="inline">
            <input type="radio" name="mode" value="key" checked={mode === 'key'} onChange={() => setMode('key')} /> API
            key
          </label>
          <label className="inline">
            <input
              type="radio"
              name="mode"
              value="admin"
              checked={mode === 'admin'}
              onChange={() => setMode('admin')}
            />{' '}
            Admin token (operators)
          </label>
        </fieldset>
        <Field
          label={mode === 'key' ? 'API key' : 'Admin token'}
          hint="Kept in this browser tab only, until you sign out or close it."
        >
          {(id) => (
            <input
              id={id}
              type="password"
              autoComplete="off"
              spellCheck={false}
              value={secret}
              onChange={(event) => setSecret(event.target.value)}
              required
            />
          )}
        </Field>
        <button type="submit" className="primary" disabled={busy}>
          {busy ? 'Checking…' : 'Sign in'}
        </button>
        <ErrorNote error={error} />
      </form>
      <p className="muted">
        API reference: <a href="/docs">/docs</a>
      </p>
    </main>
  );
}
