import path from 'node:path';
import madge from 'madge';

/**
 * No import circle anywhere in the project, type-only imports included (madge counts `import type` unless told
 * not to): a circle of types still ties the modules together for every reader and tool. The backend: the same
 * folders as tsconfig.json's `include`; the console (console/src, TypeScript and TSX) on its own config.
 */
describe('import structure', () => {
  it('has no circular imports', async () => {
    const root = path.resolve(__dirname, '..');
    const folders = ['src', 'workflows', 'migrations', 'bench', 'chaos', 'test'].map((folder) =>
      path.join(root, folder),
    );
    const graph = await madge(folders, {
      fileExtensions: ['ts'],
      tsConfig: path.join(root, 'tsconfig.json'),
      baseDir: root,
    });
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(100);
    expect(graph.circular()).toEqual([]);
  });

  it('has no circular imports in the console', async () => {
    const root = path.resolve(__dirname, '..', 'console');
    const graph = await madge(path.join(root, 'src'), {
      fileExtensions: ['ts', 'tsx'],
      tsConfig: path.join(root, 'tsconfig.json'),
      baseDir: root,
    });
    expect(Object.keys(graph.obj()).length).toBeGreaterThan(15);
    expect(graph.circular()).toEqual([]);
  });
});
