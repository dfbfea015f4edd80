import { useQuery } from '@tanstack/react-query';
import { useMemo, useState, type FormEvent } from 'react';
import { useConsole } from '../console-context';
import { ErrorNote, Field } from '../components/ui';
import { count, money } from '../format';
import { responseIdOf, useLiveResponse } from '../live';
import { Link } from '../router';
import type { CatalogModel, Price } from '../types';

const priceText = (price: Price | undefined) =>
  price
    ? `${money(price.input)} in / ${money(price.output)} out per ${count(price.count)} ${price.unit}`
    : 'no price listed';

/**
 * Pick a model of the catalog (with its price), write an input, stream a Response and watch its events, then see
 * the usage and what it cost. Optionally inside a conversation, so later turns see the earlier ones.
 */
export function PlaygroundPage() {
  const { api } = useConsole();
  const models = useQuery({
    queryKey: ['models'],
    queryFn: () => api.get<Record<string, CatalogModel>>('/v2/models', { type: 'llm' }),
  });
  const prices = useQuery({
    queryKey: ['prices'],
    queryFn: () => api.get<Record<string, Price>>('/v2/models/prices', { type: 'llm' }),
  });
  const choices = useMemo(
    () => Object.values(models.data ?? {}).filter((model) => model.available && model.protocols.includes('responses')),
    [models.data],
  );
  const [picked, setPicked] = useState('');
  const model = picked || choices.find((entry) => entry.default)?.code || choices[0]?.code || '';
  const [input, setInput] = useState('');
  const [instructions, setInstructions] = useState('');
  const [useConversation, setUseConversation] = useState(false);
  const [conversation, setConversation] = useState<string | null>(null);
  const [conversationError, setConversationError] = useState<unknown>(null);
  const live = useLiveResponse(api);
  const busy =
    live.state.phase === 'connecting' || live.state.phase === 'streaming' || live.state.phase === 'reconnecting';

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    if (!input.trim() || !model) return;
    setConversationError(null);
    let conversationId = conversation;
    if (useConversation && !conversationId) {
      try {
        conversationId = (await api.post<{ id: string }>('/v2/conversations', {})).id;
        setConversation(conversationId);
      } catch (error) {
        return setConversationError(error);
      }
    }
    const body = {
      model,
      input: input.trim(),
      // A stream is the synchronous form; a dropped connection resumes from the stored events by id.
      background: false,
      stream: true,
      ...(instructions.trim() ? { instructions: instructions.trim() } : {}),
      ...(useConversation && conversationId ? { conversation: conversationId } : {}),
    };
    await live.start((signal) => api.stream('POST', '/v2/responses', { body, signal }), responseIdOf);
  };

  const responseId = responseIdOf(live.state);
  const final = live.state.final;
  return (
    <section aria-labelledby="playground-title">
      <h1 id="playground-title">Playground</h1>
      <form className="card" onSubmit={submit} aria-label="Stream a Response">
        <div className="row">
          <Field label="Model" hint={priceText(prices.data?.[model])}>
            {(id) => (
              <select id={id} value={model} onChange={(event) => setPicked(event.target.value)}>
                {choices.map((entry) => (
                  <option key={entry.code} value={entry.code}>
                    {entry.name} ({entry.code}) · {priceText(prices.data?.[entry.code])}
                  </option>
                ))}
              </select>
            )}
          </Field>
        </div>
        <ErrorNote error={models.error} />
        <Field label="Instructions" hint="Optional: the system prompt.">
          {(id) => (
            <textarea id={id} rows={2} value={instructions} onChange={(event) => setInstructions(event.target.value)} />
          )}
        </Field>
        <Field label="Input">
          {(id) => (
            <textarea id={id} rows={4} value={input} onChange={(event) => setInput(event.target.value)} required />
          )}
        </Field>
        <label className="inline">
          <input
            type="checkbox"
            checked={useConversation}
            onChange={(event) => (setUseConversation(event.target.checked), setConversation(null))}
          />{' '}
          Keep a conversation (later turns see the earlier ones)
        </label>
        {conversation ? (
          <p className="muted">
            Conversation <span className="mono">{conversation}</span>{' '}
            <button type="button" className="link" onClick={() => setConversation(null)}>
              Start a new one
            </button>
          </p>
        ) : null}
        <div className="actions">
          <button type="submit" className="primary" disabled={busy || !model}>
            {busy ? 'Streaming…' : 'Send'}
          </button>
          {busy ? (
            <button type="button" onClick={live.stop}>
              Stop reading
            </button>
          ) : null}
        </div>
        <ErrorNote error={conversationError} prefix="Conversation" />
        <ErrorNote error={live.state.phase === 'failed' ? live.state.error : null} />
      </form>

      {live.state.phase !== 'idle' ? (
        <div className="playground-result">
          <div className="card message" aria-live="polite" aria-busy={busy}>
            <span className="muted">assistant{responseId ? ' · ' : ''}</span>
            {responseId ? (
              <Link to={`/responses/${encodeURIComponent(responseId)}`} className="mono">
                {responseId}
              </Link>
            ) : null}
            <p className="text" data-testid="playground-text">
              {live.state.text}
            </p>
            {final ? (
              <p data-testid="playground-usage">
                {final.status}: {count(final.usage?.input_tokens)} tokens in, {count(final.usage?.output_tokens)} out ·
                cost {money(final.usage?.cost)}
              </p>
            ) : null}
            {final?.error ? <p className="error">{final.error.message}</p> : null}
          </div>
          <details className="card" open>
            <summary>Events ({live.state.events.length})</summary>
            <ol className="events" data-testid="playground-events">
              {live.state.events.map((event, index) => (
                <li key={index}>
                  <code>{event.event}</code>
                  {event.event === 'response.output_text.delta' ? (
                    <span className="muted"> {JSON.stringify(event.data.delta)}</span>
                  ) : null}
                </li>
              ))}
            </ol>
          </details>
        </div>
      ) : null}
    </section>
  );
}
