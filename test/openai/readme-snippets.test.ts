import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { useTestApp } from '../support/harness';

/**
 * The README's "OpenAI SDK and compatible clients" snippets, run as printed: each ```ts block of the section is
 * compiled as it stands and run against the test app (its address in place of localhost:8080, its key as
 * SWITCHYARD_KEY); what the snippets print is checked against the results their comments state.
 */
function readmeSnippets(): string[] {
  const readme = fs.readFileSync(path.join(__dirname, '../../README.md'), 'utf8');
  const start = readme.indexOf('## OpenAI SDK and compatible clients');
  const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
  return [...section.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => match[1]!);
}

async function run(source: string, baseUrl: string, key: string): Promise<{ logged: string[]; written: string }> {
  const { outputText } = ts.transpileModule(source.replaceAll('http://localhost:8080', baseUrl), {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  const logged: string[] = [];
  let written = '';
  const fakeProcess = { env: { SWITCHYARD_KEY: key }, stdout: { write: (text: string) => (written += text) } };
  const fakeConsole = { log: (...values: unknown[]) => logged.push(values.map(String).join(' ')) };
  const body = new Function('require', 'exports', 'process', 'console', `return (async () => {\n${outputText}\n})();`);
  await body(require, {}, fakeProcess, fakeConsole);
  return { logged, written };
}

describe('README: OpenAI SDK and compatible clients', () => {
  const suite = useTestApp();
  const snippets = readmeSnippets();

  it('has the five snippets (the openai package, LangChain; then the Vercel AI SDK, LangChain, audio)', () => {
    expect(snippets).toHaveLength(5);
  });

  it('the openai package snippet runs and prints what its comments say', async () => {
    const { logged, written } = await run(snippets[0]!, suite.app.baseUrl, suite.key);
    expect(logged).toEqual(['hello', 'streamed', '6', 'message', 'message', 'message', '2']);
    expect(written).toBe('streamed');
  });

  it('the LangChain snippet runs and prints what its comments say', async () => {
    const { logged } = await run(snippets[1]!, suite.app.baseUrl, suite.key);
    expect(logged).toEqual(['hello langchain', '256']);
  });

  it('the Vercel AI SDK snippet runs and prints what its comments say', async () => {
    const { logged } = await run(snippets[2]!, suite.app.baseUrl, suite.key);
    expect(logged).toEqual(['hello vercel', 'Tool weather returned: sunny in Lima', '256', 'Hello from Switchyard.']);
  });

  it('the LangChain tools and structured output snippet runs and prints what its comments say', async () => {
    const { logged } = await run(snippets[3]!, suite.app.baseUrl, suite.key);
    expect(logged).toEqual(['Tool get_weather returned: sunny in Lima', 'Kyoto']);
  });

  it('the audio snippet runs and prints what its comments say', async () => {
    const { logged } = await run(snippets[4]!, suite.app.baseUrl, suite.key);
    expect(logged).toEqual(['Hello from Switchyard.', '00:00:00,060 --> 00:00:01,233']);
  });
});
