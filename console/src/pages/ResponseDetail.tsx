import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect } from 'react';
import { useConsole } from '../console-context';
import { ErrorNote, Loading, StatusBadge } from '../components/ui';
import { count, duration, money, when } from '../format';
import { useLiveResponse } from '../live';
import { Link } from '../router';
import {
  itemText,
  type InputItem,
  type ListEnvelope,
  type OutputItem,
  type ResponseObject,
  type ResponseSummary,
} from '../types';

const FINAL = new Set(['completed', 'incomplete', 'failed', 'cancelled']);

/**
 * One Response: input, output items, usage and cost, error, webhook outcome. A running one is followed live over
 * its event stream (resumed after a drop) and can be cancelled here.
 */
export function ResponseDetailPage(props: { id: string }) {
  const { api } = useConsole();
  const queryClient = useQueryClient();
  const path = `/v2/responses/${encodeURIComponent(props.id)}`;
  const response = useQuery({ queryKey: ['response', props.id], queryFn: () => api.get<ResponseObject>(path) });
  const summary = useQuery({
    queryKey: ['response-summary', props.id],
    queryFn: () => api.get<ResponseSummary>(`/v2/organization/responses/${encodeURIComponent(props.id)}`),
  });
  const input = useQuery({
    queryKey: ['response-input', props.id],
    queryFn: () => api.get<ListEnvelope<InputItem>>(`${path}/input_items`, { limit: 100, order: 'asc' }),
  });
  const live = useLiveResponse(api);
  const running = response.data ? !FINAL.has(response.data.status) : false;

  // Follow a running Response once; when its stream ends, read the final state again.
  useEffect(() => {
    if (running) void live.follow(props.id);
    return () => live.stop();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [running, props.id]);
  useEffect(() => {
    if (live.state.phase === 'done') {
      void queryClient.invalidateQueries({ queryKey: ['response', props.id] });
      void queryClient.invalidateQueries({ queryKey: ['response-summary', props.id] });
      void queryClient.invalidateQueries({ queryKey: ['responses'] });
    }
  }, [live.state.phase, props.id, queryClient]);

  const cancel = useMutation({
    mutationFn: () => api.post<ResponseObject>(`${path}/cancel`),
    onSuccess: () => {
      void queryClient.invalidateQueries({ queryKey: ['response', props.id] });
      void queryClient.invalidateQueries({ queryKey: ['response-summary', props.id] });
    },
  });

  const data = live.state.final ?? response.data;
  const status = live.state.final?.status ?? live.state.status ?? data?.status;
  return (
    <section aria-labelledby="response-title">
      <p>
        <Link to="/responses">← Responses</Link>
      </p>
      <h1 id="response-title" className="mono">
        {props.id}
      </h1>
      {response.isPending ? <Loading /> : null}
      <ErrorNote error={response.error} />
      {data ? (
        <>
          <dl className="facts">
            <dt>Status</dt>
            <dd data-testid="status">
              <StatusBadge status={status ?? data.status} />
            </dd>
            <dt>Model</dt>
            <dd>{data.model}</dd>
            <dt>Mode</dt>
            <dd>{data.background ? 'background' : 'synchronous'}</dd>
            <dt>Created</dt>
            <dd>{when(data.created_at)}</dd>
            <dt>Duration</dt>
            <dd>{duration(summary.data?.duration_ms)}</dd>
            <dt>Usage</dt>
            <dd>{data.usage ? `${count(data.usage.input_tokens)} in, ${count(data.usage.output_tokens)} out` : '—'}</dd>
            <dt>Cost</dt>
            <dd>{money(data.usage?.cost ?? summary.data?.usage?.cost)}</dd>
            <dt>Webhook</dt>
            <dd>
              {summary.data?.webhook
                ? `${summary.data.webhook.status}${summary.data.webhook.response_status ? ` (HTTP ${summary.data.webhook.response_status})` : ''}${summary.data.webhook.error ? `: ${summary.data.webhook.error}` : ''}`
                : 'none'}
            </dd>
          </dl>
          {status && !FINAL.has(status) ? (
            <div className="actions">
              <button type="button" className="danger" onClick={() => cancel.mutate()} disabled={cancel.isPending}>
                Cancel Response
              </button>
              <span className="muted" role="status">
                {live.state.phase === 'streaming'
                  ? 'Following live…'
                  : live.state.phase === 'reconnecting'
                    ? 'Reconnecting…'
                    : ''}
              </span>
            </div>
          ) : null}
          <ErrorNote error={cancel.error} prefix="Cancel" />
          {data.error ? (
            <div className="card error-card">
              <h2>Error</h2>
              <p>
                <code>{data.error.code}</code>: {data.error.message}
              </p>
            </div>
          ) : null}
          {data.incomplete_details ? <p className="warning">Incomplete: {data.incomplete_details.reason}</p> : null}

          <h2>Input</h2>
          <ErrorNote error={input.error} />
          {input.data ? <Items items={input.data.data} /> : <Loading />}

          <h2>Output</h2>
          {running && !live.state.final ? (
            <div className="card message" aria-live="polite" aria-busy={live.state.phase !== 'done'}>
              <span className="muted">assistant</span>
              <p className="text" data-testid="live-text">
                {live.state.text}
              </p>
            </div>
          ) : (
            <Items items={data.output} />
          )}
          <ErrorNote error={live.state.phase === 'failed' ? live.state.error : null} prefix="Stream" />
        </>
      ) : null}
    </section>
  );
}

function Items(props: { items: Array<OutputItem | InputItem> }) {
  if (props.items.length === 0) return <p className="muted">Nothing.</p>;
  return (
    <ol className="items">
      {props.items.map((item, index) => (
        <li key={item.id ?? index} className="card message">
          <span className="muted">{item.type === 'message' ? item.role : item.type}</span>
          {item.type === 'message' ? <p className="text">{itemText(item)}</p> : null}
          {item.type === 'function_call' || item.type === 'mcp_call' ? (
            <pre>
              {item.name}({item.arguments})
            </pre>
          ) : null}
          {'output' in item && item.output ? <pre>{item.output}</pre> : null}
        </li>
      ))}
    </ol>
  );
}
