/** The default suite: embedded engine; PGlite, or Postgres when TEST_DATABASE_URL is set. */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['<rootDir>/test/temporal-server/', '/node_modules/'],
  testTimeout: 30000,
  // Tests run in a worker process that is replaced between test files once it holds more than this, rather than in
  // the runner's own process (where one worker would otherwise put them): each file starts apps with their own
  // embedded databases and codecs, and a CI run on this 2-core machine was killed for memory (18-22 GB) twice.
  workerIdleMemoryLimit: '1.5GB',
};
