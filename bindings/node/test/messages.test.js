'use strict'
// Messages that say what to do, in Node's own names and units.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { open } = require('fencing-tokens')

test('a lease or a HeldLease where a token goes says "pass lease.token", and writes nothing', async () => {
  const store = await open('memory:')
  const lease = await store.acquire('s', { holder: 'h', ttlMs: 10000 })
  await assert.rejects(store.put('s', 'k', Buffer.from('v'), { token: lease }), (err) => {
    assert.equal(err.code, 'INVALID_ARGUMENT')
    assert.ok(err instanceof TypeError)
    assert.match(err.message, /pass lease\.token/)
    return true
  })
  const held = await store.lease('t', { holder: 'h', ttlMs: 10000 })
  assert.throws(() => store.putSync('t', 'k', Buffer.from('v'), { token: held }), /pass lease\.token/)
  await held.release()
  assert.equal(await store.get('s', 'k'), null)
  assert.equal(await store.fenceOf('t'), held.token)
  await store.close()
})

test('ttlMs 1.5 asks for whole milliseconds, not a bigint or a decimal string', async () => {
  const store = await open('memory:')
  await assert.rejects(store.acquire('s', { holder: 'h', ttlMs: 1.5 }), (err) => {
    assert.ok(err instanceof RangeError)
    assert.match(err.message, /ttlMs 1\.5 .*whole number of milliseconds/)
    assert.doesNotMatch(err.message, /decimal string/)
    return true
  })
  // A token still suggests what a token takes.
  await assert.rejects(store.put('s', 'k', 'v', { token: 1.5 }), /bigint or a decimal string/)
  assert.equal((await store.status('s')).lease, null)
  await store.close()
})
