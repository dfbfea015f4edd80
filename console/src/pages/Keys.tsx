import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useConsole } from '../console-context';
import { ConfirmDialog, CopyButton, ErrorNote, Field, Loading, StatusBadge, TableHead } from '../components/ui';
import { when } from '../format';
import type { ApiKey, ListEnvelope } from '../types';

const EXPIRY_CHOICES = [
  { label: 'Never', seconds: 0 },
  { label: '30 days', seconds: 30 * 86_400 },
  { label: '90 days', seconds: 90 * 86_400 },
  { label: '1 year', seconds: 365 * 86_400 },
];

/** The API tab: the account's keys, a new key shown once, disabling one with a confirmation. */
export function KeysPage() {
  const { api, signOut } = useConsole();
  const queryClient = useQueryClient();
  const keys = useQuery({ queryKey: ['keys'], queryFn: () => api.get<ListEnvelope<ApiKey>>('/v2/organization/keys') });
  const [name, setName] = useState('');
  const [expiry, setExpiry] = useState(0);
  const [created, setCreated] = useState<(ApiKey & { key: string }) | null>(null);
  const [disabling, setDisabling] = useState<ApiKey | null>(null);

  const create = useMutation({
    mutationFn: () =>
      api.post<ApiKey & { key: string }>('/v2/organization/keys', {
        ...(name.trim() ? { name: name.trim() } : {}),
        ...(expiry ? { expires_in_seconds: expiry } : {}),
      }),
    onSuccess: (key) => {
      setCreated(key);
      setName('');
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });
  const disable = useMutation({
    mutationFn: (key: ApiKey) =>
      api.post<ApiKey>(
        `/v2/organization/keys/${encodeURIComponent(key.id)}/disable`,
        key.current ? { confirm_self: true } : {},
      ),
    onSuccess: (key) => {
      setDisabling(null);
      // The console's own key no longer works: there is nothing more it can do as this key.
      if (key.current) return signOut();
      void queryClient.invalidateQueries({ queryKey: ['keys'] });
    },
  });

  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <p className="muted">
        A key gives full access to this account: the API, this console, its balance. Keep it secret.
      </p>

      <form className="card" onSubmit={submit} aria-label="Create a key">
        <h2>Create a key</h2>
        <div className="row">
          <Field label="Name" hint="Optional: where the key is used.">
            {(id) => <input id={id} maxLength={100} value={name} onChange={(event) => setName(event.target.value)} />}
          </Field>
          <Field label="Expires">
            {(id) => (
              <select id={id} value={expiry} onChange={(event) => setExpiry(Number(event.target.value))}>
                {EXPIRY_CHOICES.map((choice) => (
                  <option key={choice.seconds} value={choice.seconds}>
                    {choice.label}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <button type="submit" className="primary" disabled={create.isPending}>
          Create key
        </button>
        <ErrorNote error={create.error} />
      </form>

      {created ? (
        <div className="card notice" role="region" aria-label="New key">
          <h2>Your new key{created.name ? ` “${created.name}”` : ''}</h2>
          <p>This is the only time the key is shown. Copy it now and keep it somewhere safe.</p>
          <p>
            <code className="secret" data-testid="new-key">
              {created.key}
            </code>
          </p>
          <CopyButton text={created.key} label="Copy key" />{' '}
          <button type="button" onClick={() => setCreated(null)}>
            Done
          </button>
        </div>
      ) : null}

      <h2>Keys</h2>
      {keys.isPending ? <Loading /> : null}
      <ErrorNote error={keys.error} />
      {keys.data ? (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Keys of this account</caption>
            <TableHead columns={['Name', 'Id', 'Status', 'Created', 'Last used', 'Expires', null]} />
            <tbody>
              {keys.data.data.map((key) => (
                <tr key={key.id}>
                  <td>
                    {key.name ?? <span className="muted">unnamed</span>}
                    {key.current ? <span className="badge">this console</span> : null}
                  </td>
                  <td className="mono">{key.id}</td>
                  <td>
                    <StatusBadge status={key.status} />
                  </td>
                  <td>{when(key.created_at)}</td>
                  <td>{key.last_used_at ? when(key.last_used_at) : 'never'}</td>
                  <td>{key.expires_at ? when(key.expires_at) : 'never'}</td>
                  <td>
                    {key.status === 'active' ? (
                      <button
                        type="button"
                        className="danger"
                        onClick={() => setDisabling(key)}
                        aria-label={`Disable key ${key.name ?? key.id}`}
                      >
                        Disable
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}

      <ConfirmDialog
        open={disabling !== null}
        title="Disable this key?"
        confirmLabel={disabling?.current ? 'Disable and sign out' : 'Disable key'}
        danger
        onConfirm={() => disabling && disable.mutate(disabling)}
        onCancel={() => {
          setDisabling(null);
          disable.reset();
        }}
      >
        <p>
          Requests with <strong>{disabling?.name ?? disabling?.id}</strong> will be refused at once. This cannot be
          undone.
        </p>
        {disabling?.current ? (
          <p className="warning" role="alert">
            This is the key this console is signed in with. Disabling it signs you out, and you will need another key to
            come back.
          </p>
        ) : null}
        <ErrorNote error={disable.error} />
      </ConfirmDialog>
    </section>
  );
}
