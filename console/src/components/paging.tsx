import { useState } from 'react';
import { Field } from './ui';

/**
 * Keyset paging as the service's lists do it: the cursor of each page is the last id of the page before, so going
 * back is popping the stack of cursors. `reset` goes back to the newest page (a filter changed).
 */
export function useCursorPages() {
  const [cursors, setCursors] = useState<string[]>([]);
  return {
    after: cursors.at(-1),
    hasNewer: cursors.length > 0,
    newer: () => setCursors(cursors.slice(0, -1)),
    older: (lastId: string | null | undefined) => lastId && setCursors([...cursors, lastId]),
    reset: () => setCursors([]),
  };
}

export function Pager(props: {
  pages: ReturnType<typeof useCursorPages>;
  hasOlder: boolean;
  lastId: string | null | undefined;
}) {
  const { pages } = props;
  return (
    <div className="actions">
      <button type="button" disabled={!pages.hasNewer} onClick={pages.newer}>
        Newer
      </button>
      <button type="button" disabled={!props.hasOlder} onClick={() => pages.older(props.lastId)}>
        Older
      </button>
    </div>
  );
}

/** A select of one filter: "any" (the empty value) or one of `options`. */
export function FilterSelect(props: {
  label: string;
  anyLabel: string;
  value: string;
  options: readonly string[];
  onChange(value: string): void;
}) {
  return (
    <Field label={props.label}>
      {(id) => (
        <select id={id} value={props.value} onChange={(event) => props.onChange(event.target.value)}>
          <option value="">{props.anyLabel}</option>
          {props.options.map((option) => (
            <option key={option} value={option}>
              {option.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
