/** The default suite: embedded engine; PGlite, or Postgres when TEST_DATABASE_URL is set. */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': [
      '@swc/jest',
      { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
    ],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  testPathIgnorePatterns: ['<rootDir>/test/temporal-server/', '/node_modules/'],
  testTimeout: 30000,
  // Tests run in a worker process, replaced between test files once its heap passes this, rather than in the
  // runner's own process (where one worker would otherwise put them): every file starts apps with embedded databases
  // whose WebAssembly memory lies outside the heap, and a worker grew by some 330 MB of RSS a file (8 GB after 25
  // files; two CI runs on this 24 GB machine were killed for memory). The heap grows 30-40 MB a file, so this
  // replaces the worker about every ten files.
  workerIdleMemoryLimit: '400MB',
};
