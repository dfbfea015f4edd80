/** Two projects: the default suite (embedded engine; PGlite, or Postgres when TEST_DATABASE_URL is set)
 * and the opt-in suite against a real Temporal server (TEMPORAL_ADDRESS). */
const transform = { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] };
module.exports = {
  projects: [
    {
      displayName: 'default',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/**/*.test.ts'],
      testPathIgnorePatterns: ['<rootDir>/test/temporal-server/'],
      testTimeout: 30000,
    },
    {
      displayName: 'temporal',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/temporal-server/**/*.test.ts'],
      testTimeout: 120000,
    },
  ],
};
