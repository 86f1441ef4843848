'use strict'
// JSON.stringify of receipts and leases: bigints as decimal strings (which
// every token argument takes back exactly), instead of a TypeError.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { open, parseToken } = require('fencing-tokens')

test('receipts and leases have toJSON: bigints as decimal strings', async () => {
  const store = await open('memory:?jumps=unbounded') // a jump past 2^48
  await store.advanceCounter('s', 2n ** 53n)
  const lease = await store.acquire('s', { holder: 'h', ttlMs: 10000 })
  const asJson = JSON.parse(JSON.stringify(lease))
  assert.equal(asJson.token, '9007199254740993')
  assert.equal(asJson.holder, 'h')
  assert.equal(asJson.scope, 's')
  assert.equal(typeof asJson.expiresAt, 'string')
  assert.equal(parseToken(asJson.token), lease.token)
  const renewed = await store.renew(lease)
  assert.equal(JSON.parse(JSON.stringify(renewed)).token, '9007199254740993')

  const fence = { token: asJson.token } // the string goes straight back in
  const receipt = await store.put('s', 'k', 'v', fence)
  assert.deepEqual(JSON.parse(JSON.stringify(receipt)), { version: '1', token: '9007199254740993' })
  assert.deepEqual(JSON.parse(JSON.stringify(store.putSync('s', 'k', 'w', fence))), { version: '2', token: '9007199254740993' })
  const batch = await store.apply('s', [{ put: 'a', value: 'x' }], fence)
  assert.equal(JSON.stringify(batch), '[{"version":"1","token":"9007199254740993"}]')
  assert.deepEqual(JSON.parse(JSON.stringify(await store.delete('s', 'k', fence))), { version: '0', token: '9007199254740993' })
  // The data itself is unchanged: bigints, and no extra enumerable key.
  assert.deepStrictEqual(Object.keys(receipt), ['version', 'token'])
  assert.equal(receipt.token, 9007199254740993n)
  await store.close()
})

test('every write returns one kind of receipt: put, putSync (both paths), delete, execute, apply, a fence, a held lease', async () => {
  const store = await open('memory:')
  try {
    const token = await store.nextToken('s')
    const held = await store.lease('h', { holder: 'me', ttlMs: 10000 })
    const receipts = [
      await store.put('s', 'a', 'v', { token }),
      store.putSync('s', 'a', 'v', { token }), // the token-only path
      store.putSync('s', 'a', 'v', { token, seq: 1 }), // the options path
      await store.execute('s', { put: 'b', value: 'v' }, { token }),
      ...(await store.apply('s', [{ put: 'c', value: 'v' }], { token })),
      await store.delete('s', 'a', { token }),
      store.fence('s', token).putSync('d', 'v'),
      held.putSync('k', 'v'),
    ]
    await held.release()
    const kind = Object.getPrototypeOf(receipts[0])
    for (const r of receipts) {
      assert.equal(Object.getPrototypeOf(r), kind)
      assert.deepStrictEqual(Object.keys(r), ['version', 'token'])
      assert.equal(typeof r.version, 'bigint')
      assert.equal(JSON.stringify(r), `{"version":"${r.version}","token":"${r.token}"}`)
    }
  } finally {
    await store.close()
  }
})
