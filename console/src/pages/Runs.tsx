import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useConsole } from '../console-context';
import { FilterSelect, Pager, useCursorPages } from '../components/paging';
import { EmptyRow, ErrorNote, Loading, StatusBadge, TableHead } from '../components/ui';
import { duration, money, when } from '../format';
import { RUN_STATUSES, type ListEnvelope, type RunSummary } from '../types';

const ACTIVE = new Set(['queued', 'in_progress', 'requires_action', 'cancelling']);

/** Recent Runs (the legacy Assistants API) of the account, filtered by status; an active one can be cancelled here. */
export function RunsPage() {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const [status, setStatus] = useState('');
  const pages = useCursorPages();
  const { after } = pages;
  const page = useQuery({
    queryKey: ['runs', status, after],
    queryFn: () =>
      api.get<ListEnvelope<RunSummary>>('/v2/organization/runs', { limit: 20, after, status: status || undefined }),
    refetchInterval: (query) => (query.state.data?.data.some((row) => ACTIVE.has(row.status)) ? 2_000 : false),
  });
  const cancel = useMutation({
    mutationFn: (run: RunSummary) =>
      api.post(`/v2/threads/${encodeURIComponent(run.thread_id)}/runs/${encodeURIComponent(run.id)}/cancel`),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['runs'] }),
  });
  return (
    <section aria-labelledby="runs-title">
      <h1 id="runs-title">Runs</h1>
      <p className="muted">Runs of the Assistants API (threads).</p>
      <FilterSelect
        label="Status"
        anyLabel="Any status"
        value={status}
        options={RUN_STATUSES}
        onChange={(value) => (setStatus(value), pages.reset())}
      />
      {page.isPending ? <Loading /> : null}
      <ErrorNote error={page.error} />
      <ErrorNote error={cancel.error} prefix="Cancel" />
      <div className="table-wrap">
        <table>
          <caption className="sr-only">Runs</caption>
          <TableHead columns={['Run', 'Thread', 'Status', 'Model', 'Cost', 'Created', 'Duration', 'Error', null]} />
          <tbody>
            {(page.data?.data ?? []).map((row) => (
              <tr key={row.id}>
                <td className="mono">{row.id}</td>
                <td className="mono">{row.thread_id}</td>
                <td>
                  <StatusBadge status={row.status} />
                </td>
                <td>{row.model}</td>
                <td>{money(row.usage?.cost)}</td>
                <td>{when(row.created_at)}</td>
                <td>{duration(row.duration_ms)}</td>
                <td>{row.last_error ? row.last_error.message : '—'}</td>
                <td>
                  {ACTIVE.has(row.status) && row.status !== 'cancelling' ? (
                    <button
                      type="button"
                      className="danger"
                      disabled={cancel.isPending}
                      onClick={() => cancel.mutate(row)}
                      aria-label={`Cancel run ${row.id}`}
                    >
                      Cancel
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
            {page.data && page.data.data.length === 0 ? (
              <EmptyRow columns={9}>No Runs{status ? ` with status ${status}` : ''}.</EmptyRow>
            ) : null}
          </tbody>
        </table>
      </div>
      <Pager pages={pages} hasOlder={Boolean(page.data?.has_more)} lastId={page.data?.last_id} />
    </section>
  );
}
