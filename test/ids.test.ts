import { newId } from '../src/ids';

describe('newId', () => {
  it('gives prefixed ids of 24 hex characters, all different across many refills of its random pool', () => {
    const ids = Array.from({ length: 2000 }, () => newId('resp'));
    for (const id of ids) expect(id).toMatch(/^resp_[0-9a-f]{24}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(5, 13))).size).toBeGreaterThan(1990);
  });
});
