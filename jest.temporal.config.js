/**
 * `npm run test:temporal`: the whole HTTP suite again, on Postgres and a real Temporal server (TEST_TEMPORAL_ADDRESS;
 * `npm run temporal` starts one): every app the tests start runs the Temporal engine with a production worker in
 * its process (test/support/harness.ts), plus the tests that read workflows from the server (test/temporal-server/).
 * Skipped here, each for its reason: what exercises the embedded engine's own machinery, which Temporal replaces.
 */
const base = require('./jest.config');

const embeddedEngineMachinery = [
  // The embedded engine itself: its claim loop, retries, deferred step records, group commit, cancel race.
  '<rootDir>/test/engine/',
  // Its re-run of a job after a crash, from recorded steps (Temporal replays its history instead: test/temporal/).
  '<rootDir>/test/responses/engine-replay.test.ts',
  // Offline Temporal checks (bundle, replay, mock activity environment): engine-independent, already in `npm test`.
  '<rootDir>/test/temporal/',
];

module.exports = {
  ...base,
  testPathIgnorePatterns: [...embeddedEngineMachinery, '/node_modules/'],
  globalSetup: '<rootDir>/test/support/temporal-global-setup.ts',
  testTimeout: 60000,
};
