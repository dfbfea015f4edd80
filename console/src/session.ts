/**
 * Who the console acts as. A person signs in with an API key (it gives full access to its account), or an operator
 * with the admin token and then picks an account. Kept in this tab's sessionStorage only: never in a URL, a cookie
 * or the page's markup, and gone when the tab closes.
 */
export type Session =
  { kind: 'key'; key: string } | { kind: 'admin'; token: string; account?: { id: string; name: string } };

const STORAGE_KEY = 'switchyard.console.session';

export function loadSession(): Session | null {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY);
    if (!text) return null;
    const value = JSON.parse(text) as Session;
    return value && (value.kind === 'key' || value.kind === 'admin') ? value : null;
  } catch {
    return null;
  }
}

export function saveSession(session: Session | null): void {
  if (session) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  else sessionStorage.removeItem(STORAGE_KEY);
}

/** The headers that authenticate a call of the public API as the session's account. */
export function authHeaders(session: Session): Record<string, string> {
  if (session.kind === 'key') return { 'X-Auth-Token': session.key };
  const headers: Record<string, string> = { Authorization: `Bearer ${session.token}` };
  if (session.account) headers['X-Switchyard-Account'] = session.account.id;
  return headers;
}
