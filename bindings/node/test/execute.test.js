'use strict'
// store.execute(scope, op, options): one op in the form apply() takes, a put
// (with a value) or a delete, checked and counted as put and delete are;
// and store.backendKind, the backend the URL named.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const { open, StaleTokenError, SequenceOutOfOrderError, VersionMismatchError } = require('fencing-tokens')
const { backends } = require('./helpers.js')

for (const [name, url] of backends()) {
  describe(name, () => {
    test('execute puts and deletes as put and delete do', async () => {
      const store = await open(url())
      try {
        const token = await store.nextToken('s')
        const put = await store.execute('s', { put: 'k', value: 'v1' }, { token, seq: 5n, holder: 'A' })
        assert.deepEqual({ ...put }, { version: 1n, token })
        assert.equal(JSON.stringify(put), `{"version":"1","token":"${token}"}`)
        assert.deepEqual((await store.get('s', 'k')).value, Buffer.from('v1'))
        await store.execute('s', { put: 'k', value: Buffer.from([0, 255]), expectedVersion: 1n }, { token, seq: 6n })
        assert.deepEqual((await store.get('s', 'k')).value, Buffer.from([0, 255]))

        // Refused as put refuses, changing nothing.
        await assert.rejects(store.execute('s', { delete: 'k', expectedVersion: 1n }, { token }), VersionMismatchError)
        await assert.rejects(store.execute('s', { put: 'k', value: 'x' }, { token, seq: 6n }), SequenceOutOfOrderError)
        assert.equal((await store.get('s', 'k')).version, 2n)

        assert.deepEqual({ ...(await store.execute('s', { delete: 'k', expectedVersion: 2n }, { token })) }, { version: 0n, token })
        assert.equal(await store.get('s', 'k'), null)
        await store.nextToken('s')
        await store.execute('s', { put: 'k', value: 'new' }, { token: token + 1n })
        await assert.rejects(store.execute('s', { delete: 'k' }, { token }), StaleTokenError)
        assert.deepEqual((await store.get('s', 'k')).value, Buffer.from('new'))

        // Counted as the put or the delete it is.
        const text = store.metricsText()
        const calls = (op) => Number(text.match(new RegExp(`^fencing_call_duration_seconds_count\\{[^}]*op="${op}"\\} (\\d+)$`, 'm'))?.[1] ?? 0)
        assert.deepEqual([calls('put'), calls('delete'), calls('execute')], [4, 3, 0])
      } finally {
        await store.close()
      }
    })

    test('backendKind names the backend, also once closed', async () => {
      const store = await open(url())
      assert.equal(store.backendKind, name)
      await store.close()
      assert.equal(store.backendKind, name)
    })
  })
}
