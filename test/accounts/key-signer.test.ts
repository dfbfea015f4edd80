import { createKeySigner } from '../../src/accounts/api-keys';

describe('KeySigner', () => {
  const signer = createKeySigner('s'.repeat(48), 'switchyard-test');

  afterEach(() => jest.useRealTimers());

  it('answers a token it verified before from memory until the token expires', async () => {
    jest.useFakeTimers({
      now: new Date('2026-11-23T12:00:00Z'),
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'],
    });
    const token = await signer.issue({
      keyId: 'key_1',
      accountId: 'acct_1',
      expiresAt: new Date('2026-11-23T12:01:00Z'),
    });
    expect(await signer.verify(token)).toEqual({ keyId: 'key_1', accountId: 'acct_1' });
    expect(await signer.verify(token)).toEqual({ keyId: 'key_1', accountId: 'acct_1' });
    // Remembered or not, a token past its exp is refused.
    jest.setSystemTime(new Date('2026-11-23T12:01:01Z'));
    await expect(signer.verify(token)).rejects.toMatchObject({ status: 401, message: 'The API key has expired.' });
    await expect(signer.verify(token)).rejects.toMatchObject({ status: 401 });
  });

  it('never remembers a token that failed: a forged signature fails every time', async () => {
    const token = await signer.issue({ keyId: 'key_2', accountId: 'acct_2' });
    const [header, payload, signature] = token.split('.');
    const forgedPayload = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: 'acct_other' }),
    ).toString('base64url');
    const forged = `${header}.${forgedPayload}.${signature}`;
    for (let attempt = 0; attempt < 2; attempt++) {
      await expect(signer.verify(forged)).rejects.toMatchObject({
        status: 401,
        message: 'The API key signature is not valid.',
      });
    }
    expect(await signer.verify(token)).toEqual({ keyId: 'key_2', accountId: 'acct_2' });
    // Another service's signer (another secret) does not accept this one's tokens, remembered or not.
    await expect(createKeySigner('t'.repeat(48), 'switchyard-test').verify(token)).rejects.toMatchObject({
      status: 401,
    });
  });
});
