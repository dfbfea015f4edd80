import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsole } from '../console-context';
import { FilterSelect, Pager, useCursorPages } from '../components/paging';
import { EmptyRow, ErrorNote, Loading, StatusBadge, TableHead } from '../components/ui';
import { duration, money, when } from '../format';
import { Link } from '../router';
import { RESPONSE_STATUSES, type ListEnvelope, type ResponseSummary } from '../types';

const FINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

/** Recent Responses of the account, newest first, filtered by status; refreshed while any shown one is running. */
export function ResponsesPage() {
  const { api } = useConsole();
  const [status, setStatus] = useState('');
  const pages = useCursorPages();
  const { after } = pages;
  const page = useQuery({
    queryKey: ['responses', status, after],
    queryFn: () =>
      api.get<ListEnvelope<ResponseSummary>>('/v2/organization/responses', {
        limit: 20,
        after,
        status: status || undefined,
      }),
    refetchInterval: (query) => (query.state.data?.data.some((row) => !FINAL.has(row.status)) ? 2_000 : false),
  });
  return (
    <section aria-labelledby="responses-title">
      <h1 id="responses-title">Responses</h1>
      <FilterSelect
        label="Status"
        anyLabel="Any status"
        value={status}
        options={RESPONSE_STATUSES}
        onChange={(value) => (setStatus(value), pages.reset())}
      />
      {page.isPending ? <Loading /> : null}
      <ErrorNote error={page.error} />
      <div className="table-wrap">
        <table data-testid="responses">
          <caption className="sr-only">Responses</caption>
          <TableHead columns={['Response', 'Status', 'Model', 'Cost', 'Created', 'Duration', 'Mode', 'Webhook']} />
          <tbody>
            {(page.data?.data ?? []).map((row) => (
              <tr key={row.id}>
                <td className="mono">
                  <Link to={`/responses/${encodeURIComponent(row.id)}`}>{row.id}</Link>
                </td>
                <td>
                  <StatusBadge status={row.status} />
                </td>
                <td>{row.model}</td>
                <td>{money(row.usage?.cost)}</td>
                <td>{when(row.created_at)}</td>
                <td>{duration(row.duration_ms)}</td>
                <td>{row.background ? 'background' : 'synchronous'}</td>
                <td>{row.webhook ? row.webhook.status : '—'}</td>
              </tr>
            ))}
            {page.data && page.data.data.length === 0 ? (
              <EmptyRow columns={8}>
                No Responses{status ? ` with status ${status}` : ''}. Try the <Link to="/playground">playground</Link>.
              </EmptyRow>
            ) : null}
          </tbody>
        </table>
      </div>
      <Pager pages={pages} hasOlder={Boolean(page.data?.has_more)} lastId={page.data?.last_id} />
    </section>
  );
}
