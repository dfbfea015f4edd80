/** The default suite: embedded engine; PGlite, or Postgres when TEST_DATABASE_URL is set. */
module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['@swc/jest', { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } }] },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['<rootDir>/test/temporal-server/', '/node_modules/'],
  testTimeout: 30000,
};
