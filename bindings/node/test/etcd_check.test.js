'use strict'
// Fencing your own etcd keys (docs/etcd.md, "Fence your own etcd keys"):
// `store.etcdCheck` says what a transaction sent with etcd's own Node client
// (the `etcd3` package, gRPC) must compare and put, so that it commits only
// while its token is current. Runs on $FENCING_TEST_ETCD_CLUSTER (skipped
// without it, failed when FENCING_REQUIRE_ETCD=1).

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { Etcd3 } = require('etcd3')
const fencing = require('fencing-tokens')
const { etcdOrSkip, freshSchema } = require('./helpers.js')

/** The caller's own transaction: its put, under what the check said. */
async function ownTxn(client, check, key, value) {
  let txn = null
  for (const { key: k, modRevision } of check.unchanged) {
    txn = txn === null
      ? client.if(k, 'Mod', '==', modRevision)
      : txn.and(k, 'Mod', '==', modRevision)
  }
  const puts = check.puts.map(({ key: k, value: v }) => client.put(k).value(v))
  const result = await txn.then(...puts, client.put(key).value(value)).commit()
  return result.succeeded
}

describe("fencing one's own etcd keys through etcd's Node client", () => {
  const base = etcdOrSkip(test)
  if (base === null) return

  test('a holder overtaken after its check writes nothing; the current one writes', async () => {
    const store = await fencing.open(`${base}/${freshSchema('etcdcheck')}`)
    const client = new Etcd3({
      hosts: process.env.FENCING_TEST_ETCD_CLUSTER.split(',').map((h) => `http://${h}`),
    })
    const own = `app/${freshSchema('doc')}`
    try {
      assert.equal(store.backendKind, 'etcd')
      const a = await store.nextToken('s')
      const b = await store.nextToken('s')
      const aCheck = await store.etcdCheck('s', { token: a })
      const bCheck = await store.etcdCheck('s', { token: b })
      assert.equal(typeof bCheck.unchanged[0].modRevision, 'string')
      assert.ok(Buffer.isBuffer(bCheck.puts[0].key))
      assert.equal(await ownTxn(client, bCheck, own, 'B'), true)
      // A checked before B wrote: its transaction applies nothing.
      assert.equal(await ownTxn(client, aCheck, own, 'A'), false)
      assert.equal(await client.get(own).string(), 'B')
      // The fence moved with B's own write: the store refuses A now.
      assert.equal((await store.status('s')).fence, b)
      await assert.rejects(store.etcdCheck('s', { token: a }), { code: 'STALE_TOKEN' })
      await assert.rejects(store.put('s', 'k', 'A', { token: a }), { code: 'STALE_TOKEN' })
      // The gateway form says the same.
      const body = JSON.parse(bCheck.gatewayJson)
      assert.equal(body.compare.length, bCheck.unchanged.length)
      assert.equal(body.success.length, bCheck.puts.length)
    } finally {
      client.close()
      await store.close()
    }
  })

  test('bad input is refused before anything is read, and other stores have no etcd keys', async () => {
    const store = await fencing.open(`${base}/${freshSchema('etcdcheck_bad')}`)
    try {
      for (const bad of [0, -1, '1.5', null, 2n ** 64n]) {
        await assert.rejects(store.etcdCheck('s', { token: bad }), { code: 'INVALID_ARGUMENT' })
      }
      await assert.rejects(store.etcdCheck('', { token: 1 }), { code: 'INVALID_ARGUMENT' })
      assert.equal((await store.status('s')).fence, 0n)
    } finally {
      await store.close()
    }
    const memory = await fencing.open('memory:')
    await assert.rejects(memory.etcdCheck('s', { token: 1 }), { code: 'INVALID_ARGUMENT' })
    await memory.close()
  })
})
