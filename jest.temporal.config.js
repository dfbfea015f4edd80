/** The opt-in suite against a real Temporal server (TEMPORAL_ADDRESS); skipped with a message otherwise. */
const base = require('./jest.config');
module.exports = { ...base, testMatch: ['<rootDir>/test/temporal-server/**/*.test.ts'], testPathIgnorePatterns: ['/node_modules/'], testTimeout: 120000, forceExit: true /* sdk-typescript#928: the worker keeps handles open */ };
