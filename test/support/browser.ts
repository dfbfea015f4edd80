import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's chromium (`.ci/run` installs it when missing); CHROMIUM_PATH points elsewhere. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Headless Chromium as this machine needs it (no sandbox as root, no background networking on a closed network). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** What a page did: console errors and warnings, uncaught errors, and the URL of every request it made. */
export interface PageWatch {
  problems: string[];
  requests: string[];
}

export function watchPage(page: Page): PageWatch {
  const watch: PageWatch = { problems: [], requests: [] };
  page.on('console', (message) => {
    if (message.type() === 'error' || message.type() === 'warning')
      watch.problems.push(`${message.type()}: ${message.text()}`);
  });
  page.on('pageerror', (error) => watch.problems.push(`pageerror: ${error.message}`));
  page.on('request', (request) => watch.requests.push(request.url()));
  return watch;
}

/** The requests that left `origin` (data: URLs stay in the page). */
export const requestsElsewhere = (watch: PageWatch, origin: string) =>
  watch.requests.filter((url) => !url.startsWith(origin) && !url.startsWith('data:'));
