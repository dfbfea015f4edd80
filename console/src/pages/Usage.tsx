import { useQuery } from '@tanstack/react-query';
import { useMemo, useState } from 'react';
import { useConsole } from '../console-context';
import { BarChart } from '../components/BarChart';
import { FilterSelect, Pager, useCursorPages } from '../components/paging';
import { EmptyRow, ErrorNote, Field, Loading, TableHead } from '../components/ui';
import { count, money, utcDay } from '../format';
import type { Balance, Transaction, Usage } from '../types';

const RANGES = [
  { label: 'Last 7 days', days: 7 },
  { label: 'Last 30 days', days: 30 },
  { label: 'Last 90 days', days: 90 },
];
const PAGE_SIZE = 20;
const formatMoney = (kopecks: number) => money(kopecks);

/** Every UTC day from `from` to `to` (unix seconds), so a day without spend shows as zero, not as a gap. */
function daysBetween(from: number, to: number): string[] {
  const days: string[] = [];
  const cursor = new Date(from * 1000);
  cursor.setUTCHours(0, 0, 0, 0);
  while (cursor.getTime() <= to * 1000) {
    days.push(utcDay(cursor));
    cursor.setUTCDate(cursor.getUTCDate() + 1);
  }
  return days;
}

/** Balance, spend per day and per model (computed by the service in SQL), and the transactions, filtered and paged. */
export function UsagePage() {
  const { api } = useConsole();
  const [days, setDays] = useState(30);
  // `from` is fixed per range choice, so the query key (and the cache) does not change every second; `to` is left
  // to the service (now), so a refetch includes what was spent since the page opened.
  const since = useMemo(() => ({ from: Math.floor(Date.now() / 1000) - days * 86_400 }), [days]);

  const balance = useQuery({ queryKey: ['balance'], queryFn: () => api.get<Balance>('/v2/organization/balance') });
  const byDay = useQuery({
    queryKey: ['usage', 'day', since],
    queryFn: () => api.get<Usage>('/v2/organization/usage', { ...since, group_by: 'day' }),
  });
  const byModel = useQuery({
    queryKey: ['usage', 'model', since],
    queryFn: () => api.get<Usage>('/v2/organization/usage', { ...since, group_by: 'model' }),
  });
  const byService = useQuery({
    queryKey: ['usage', 'service', since],
    queryFn: () => api.get<Usage>('/v2/organization/usage', { ...since, group_by: 'service' }),
  });

  const daily = useMemo(() => {
    const labels = daysBetween(since.from, byDay.data?.to ?? since.from + days * 86_400);
    const spent = new Map((byDay.data?.data ?? []).map((row) => [row.key, row.amount]));
    return { labels, values: labels.map((day) => spent.get(day) ?? 0) };
  }, [byDay.data, since, days]);
  const models = useMemo(
    () => ({
      labels: (byModel.data?.data ?? []).map((row) => row.key),
      values: (byModel.data?.data ?? []).map((row) => row.amount),
    }),
    [byModel.data],
  );

  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <ErrorNote error={balance.error} />
      <div className="cards">
        <div className="card stat">
          <span className="muted">Balance</span>
          <strong data-testid="balance">{balance.data ? money(balance.data.balance) : '…'}</strong>
        </div>
        <div className="card stat">
          <span className="muted">Available</span>
          <strong data-testid="available">{balance.data ? money(balance.data.available) : '…'}</strong>
          <small className="muted">less what running operations hold</small>
        </div>
        <div className="card stat">
          <span className="muted">Spent in range</span>
          <strong>{byDay.data ? money(byDay.data.total.amount) : '…'}</strong>
          <small className="muted">{byDay.data ? `${count(byDay.data.total.transactions)} charges` : ''}</small>
        </div>
      </div>

      <Field label="Period">
        {(id) => (
          <select id={id} value={days} onChange={(event) => setDays(Number(event.target.value))}>
            {RANGES.map((choice) => (
              <option key={choice.days} value={choice.days}>
                {choice.label}
              </option>
            ))}
          </select>
        )}
      </Field>

      <div className="charts">
        <div className="card">
          <h2>Spend per day</h2>
          <ErrorNote error={byDay.error} />
          <BarChart
            label={`Spend per day, ${daily.labels[0]} to ${daily.labels.at(-1)}`}
            labels={daily.labels}
            values={daily.values}
            format={formatMoney}
          />
        </div>
        <div className="card">
          <h2>Spend per model</h2>
          <ErrorNote error={byModel.error} />
          {byModel.data && byModel.data.data.length === 0 ? <p className="muted">No spend in this period.</p> : null}
          <BarChart
            label="Spend per model"
            labels={models.labels}
            values={models.values}
            format={formatMoney}
            horizontal
          />
        </div>
      </div>

      <div className="card">
        <h2>By service</h2>
        <ErrorNote error={byService.error} />
        <UsageTable caption="Spend by service" usage={byService.data} />
        <h2>By model</h2>
        <UsageTable caption="Spend by model" usage={byModel.data} />
      </div>

      <Transactions services={(byService.data?.data ?? []).map((row) => row.key)} models={models.labels} />
    </section>
  );
}

function UsageTable(props: { caption: string; usage: Usage | undefined }) {
  if (!props.usage) return <Loading />;
  return (
    <div className="table-wrap">
      <table>
        <caption className="sr-only">{props.caption}</caption>
        <TableHead
          columns={[
            props.usage.group_by === 'model' ? 'Model' : 'Service',
            'Spent',
            'Charges',
            'Input tokens',
            'Output tokens',
          ]}
        />
        <tbody>
          {props.usage.data.map((row) => (
            <tr key={row.key}>
              <td>{row.key}</td>
              <td>{money(row.amount)}</td>
              <td>{count(row.transactions)}</td>
              <td>{count(row.prompt_tokens)}</td>
              <td>{count(row.completion_tokens)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function Transactions(props: { services: string[]; models: string[] }) {
  const { api } = useConsole();
  const [service, setService] = useState('');
  const [model, setModel] = useState('');
  const pages = useCursorPages();
  const { after } = pages;
  const page = useQuery({
    queryKey: ['transactions', service, model, after],
    // One more than a page tells whether a next page exists.
    queryFn: () =>
      api.get<{ transactions: Transaction[] }>('/v2/organization/transactions', {
        limit: PAGE_SIZE + 1,
        after_id: after,
        service: service || undefined,
        model: model || undefined,
      }),
  });
  const rows = page.data?.transactions.slice(0, PAGE_SIZE) ?? [];
  const hasMore = (page.data?.transactions.length ?? 0) > PAGE_SIZE;
  return (
    <div className="card">
      <h2 id="transactions-title">Transactions</h2>
      <div className="row">
        <FilterSelect
          label="Service"
          anyLabel="All services"
          value={service}
          options={props.services}
          onChange={(value) => (setService(value), pages.reset())}
        />
        <FilterSelect
          label="Model"
          anyLabel="All models"
          value={model}
          options={props.models}
          onChange={(value) => (setModel(value), pages.reset())}
        />
      </div>
      {page.isPending ? <Loading /> : null}
      <ErrorNote error={page.error} />
      <div className="table-wrap">
        <table aria-labelledby="transactions-title" data-testid="transactions">
          <TableHead columns={['When', 'Type', 'Amount', 'Service', 'Model', 'Tokens in / out', 'For']} />
          <tbody>
            {rows.map((row) => (
              <tr key={row.id}>
                <td>{new Date(row.created_at).toLocaleString('en-GB')}</td>
                <td>{row.type}</td>
                <td className={row.type === 'credit' ? 'credit' : undefined}>
                  {row.type === 'credit' ? '+' : '−'}
                  {money(row.amount)}
                </td>
                <td>{String(row.metadata.service ?? '—')}</td>
                <td>{String(row.metadata.model ?? '—')}</td>
                <td>{row.usage ? `${count(row.usage.prompt_tokens)} / ${count(row.usage.completion_tokens)}` : '—'}</td>
                <td className="mono">
                  {String(row.metadata.response_id ?? row.metadata.request_id ?? row.metadata.run_id ?? '')}
                </td>
              </tr>
            ))}
            {page.data && rows.length === 0 ? <EmptyRow columns={7}>No transactions.</EmptyRow> : null}
          </tbody>
        </table>
      </div>
      <Pager pages={pages} hasOlder={hasMore} lastId={rows.at(-1)?.id} />
    </div>
  );
}
