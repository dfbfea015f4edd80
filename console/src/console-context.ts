import { createContext, useContext } from 'react';
import type { Api } from './api';
import type { Session } from './session';

/** What the signed-in console gives its pages: the API client, the session, and a way to sign out. */
export interface ConsoleValue {
  api: Api;
  session: Session;
  signOut(): void;
}

/** Provided by the shell (App.tsx) once signed in; pages read it with useConsole. */
export const ConsoleContext = createContext<ConsoleValue | null>(null);

/** The API client and session of the signed-in console; pages below the shell only. */
export function useConsole(): ConsoleValue {
  const value = useContext(ConsoleContext);
  if (!value) throw new Error('useConsole outside the signed-in console');
  return value;
}
