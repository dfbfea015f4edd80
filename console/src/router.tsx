import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useState,
  type AnchorHTMLAttributes,
  type MouseEvent,
} from 'react';

/** The console lives under /console/; its pages are paths below it, so a reload or a shared link opens the same page. */
export const BASE = '/console';

interface RouterValue {
  path: string;
  navigate(to: string): void;
}

const RouterContext = createContext<RouterValue>({ path: '/', navigate: () => undefined });

const currentPath = () => location.pathname.slice(BASE.length) || '/';

export function RouterProvider(props: { children: React.ReactNode }) {
  const [path, setPath] = useState(currentPath);
  useEffect(() => {
    const onPop = () => setPath(currentPath());
    addEventListener('popstate', onPop);
    return () => removeEventListener('popstate', onPop);
  }, []);
  const navigate = useCallback((to: string) => {
    history.pushState(null, '', BASE + to);
    setPath(to.split('?')[0]!);
    scrollTo(0, 0);
  }, []);
  return <RouterContext.Provider value={{ path, navigate }}>{props.children}</RouterContext.Provider>;
}

export const useRouter = () => useContext(RouterContext);

/** A link inside the console: a real href (open in a new tab works), navigated in place on a plain click. */
export function Link(props: AnchorHTMLAttributes<HTMLAnchorElement> & { to: string }) {
  const { to, ...rest } = props;
  const { navigate } = useRouter();
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(to);
  };
  return <a {...rest} href={BASE + to} onClick={onClick} />;
}
