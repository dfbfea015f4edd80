import { useId, useState, type ReactNode } from 'react';
import { ApiError } from '../api';

/** A failed request, said in words (the service's message), announced to screen readers. */
export function ErrorNote(props: { error: unknown; prefix?: string }) {
  if (!props.error) return null;
  const message =
    props.error instanceof ApiError
      ? `${props.error.message} (${props.error.code})`
      : props.error instanceof Error
        ? props.error.message
        : String(props.error);
  return (
    <p className="error" role="alert">
      {props.prefix ? `${props.prefix}: ` : ''}
      {message}
    </p>
  );
}

export function Loading(props: { label?: string }) {
  return (
    <p className="muted" role="status">
      {props.label ?? 'Loading…'}
    </p>
  );
}

export function StatusBadge(props: { status: string }) {
  return <span className={`status status-${props.status}`}>{props.status.replace(/_/g, ' ')}</span>;
}

/** A labelled field: the label is tied to its control by id. */
export function Field(props: { label: string; hint?: string; children: (id: string) => ReactNode }) {
  const id = useId();
  return (
    <div className="field">
      <label htmlFor={id}>{props.label}</label>
      {props.children(id)}
      {props.hint ? <small className="muted">{props.hint}</small> : null}
    </div>
  );
}

/** Copies text to the clipboard, saying so; where the clipboard is refused, selecting the text is left to the person. */
export function CopyButton(props: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.text);
      setState('copied');
    } catch {
      setState('failed');
    }
  };
  return (
    <>
      <button type="button" onClick={copy}>
        {props.label ?? 'Copy'}
      </button>
      <span className="muted" role="status" aria-live="polite">
        {state === 'copied'
          ? 'Copied'
          : state === 'failed'
            ? 'Copy refused by the browser: select the key and copy it'
            : ''}
      </span>
    </>
  );
}

/** A confirmation in a native modal <dialog>: focus is trapped and Escape cancels. */
export function ConfirmDialog(props: {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const titleId = useId();
  const ref = (dialog: HTMLDialogElement | null) => {
    if (!dialog) return;
    if (props.open && !dialog.open) dialog.showModal();
    if (!props.open && dialog.open) dialog.close();
  };
  return (
    <dialog ref={ref} aria-labelledby={titleId} onCancel={(event) => (event.preventDefault(), props.onCancel())}>
      <h2 id={titleId}>{props.title}</h2>
      {props.children}
      <div className="actions">
        <button type="button" onClick={props.onCancel} autoFocus>
          Cancel
        </button>
        <button type="button" className={props.danger ? 'danger' : 'primary'} onClick={props.onConfirm}>
          {props.confirmLabel}
        </button>
      </div>
    </dialog>
  );
}

/**
 * A table's header row: one column heading each. `null` is a column without a visible heading (a row's action
 * button); screen readers still hear it named "Action".
 */
export function TableHead(props: { columns: Array<string | null> }) {
  return (
    <thead>
      <tr>
        {props.columns.map((column, index) => (
          <th key={column ?? `action-${index}`} scope="col">
            {column ?? <span className="sr-only">Action</span>}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** The one row of a table with nothing to list, across all its columns. */
export function EmptyRow(props: { columns: number; children: ReactNode }) {
  return (
    <tr>
      <td colSpan={props.columns} className="muted">
        {props.children}
      </td>
    </tr>
  );
}
