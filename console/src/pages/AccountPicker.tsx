import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { adminGet } from '../api';
import { Pager, useCursorPages } from '../components/paging';
import { ErrorNote, Field, Loading, TableHead } from '../components/ui';
import { money, when } from '../format';
import type { AdminAccount, ListEnvelope } from '../types';

/** After an operator signs in with the admin token: find an account by name and act as it. */
export function AccountPicker(props: {
  token: string;
  onPick(account: { id: string; name: string }): void;
  onSignOut(): void;
}) {
  const [name, setName] = useState('');
  const pages = useCursorPages();
  const cursor = pages.after;
  const accounts = useQuery({
    queryKey: ['admin', 'accounts', name, cursor],
    queryFn: () =>
      adminGet<ListEnvelope<AdminAccount>>(props.token, '/admin/accounts', {
        name: name || undefined,
        limit: 20,
        after: cursor,
      }),
  });
  return (
    <main id="main" className="picker">
      <h1>Pick an account</h1>
      <p className="muted">Signed in as an operator. The console then acts as the account you pick.</p>
      <Field label="Filter by name">
        {(id) => (
          <input
            id={id}
            type="search"
            value={name}
            onChange={(event) => {
              setName(event.target.value);
              pages.reset();
            }}
          />
        )}
      </Field>
      {accounts.isPending ? <Loading /> : null}
      <ErrorNote error={accounts.error} />
      {accounts.data ? (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Accounts</caption>
            <TableHead columns={['Name', 'Id', 'Balance', 'Created', null]} />
            <tbody>
              {accounts.data.data.map((account) => (
                <tr key={account.id}>
                  <td>{account.name}</td>
                  <td className="mono">{account.id}</td>
                  <td>{money(account.balance)}</td>
                  <td>{when(account.created_at)}</td>
                  <td>
                    <button type="button" onClick={() => props.onPick({ id: account.id, name: account.name })}>
                      Open {account.name}
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <Pager pages={pages} hasOlder={Boolean(accounts.data?.has_more)} lastId={accounts.data?.last_id} />
      <div className="actions">
        <button type="button" className="link" onClick={props.onSignOut}>
          Sign out
        </button>
      </div>
    </main>
  );
}
