'use strict'
// Rows of docs/bad-input.md that bad-input.test.js does not cover: names of
// 64 KiB, a file that is not a database, a database written by a newer
// version of fencing. Each is refused with its code and changes nothing.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { open } = require('fencing-tokens')
const { backends, rejectsInvalid, tempDir } = require('./helpers.js')

const KIB64 = 64 * 1024

for (const [name, url] of backends()) {
  describe(name, () => {
    test('names of 64 KiB are INVALID_ARGUMENT (RangeError) and change nothing', async () => {
      const store = await open(url('clock=manual'))
      try {
        const lease = await store.acquire('s', { holder: 'A', ttlMs: 1000 })
        await store.put('s', 'k', 'v', { token: lease.token })
        const snapshot = async () => ({
          entry: await store.get('s', 'k'),
          status: await store.status('s'),
          list: await store.list('s'),
          t: await store.status('t'),
          metrics: { ...store.metrics(), rejections: store.metrics().rejections.length },
        })
        const before = await snapshot()
        for (const big of ['n'.repeat(KIB64), 'é'.repeat(KIB64 / 2)]) {
          await rejectsInvalid(store.nextToken(big), RangeError, 'nextToken scope')
          await rejectsInvalid(store.acquire(big, { holder: 'A', ttlMs: 1000 }), RangeError, 'acquire scope')
          await rejectsInvalid(store.acquire('t', { holder: big, ttlMs: 1000 }), RangeError, 'acquire holder')
          await rejectsInvalid(store.put(big, 'k', 'v', { token: lease.token }), RangeError, 'put scope')
          await rejectsInvalid(store.put('s', big, 'v', { token: lease.token }), RangeError, 'put key')
          await rejectsInvalid(store.put('s', 'k', 'v', { token: lease.token, holder: big }), RangeError, 'put holder')
          await rejectsInvalid(store.get('s', big), RangeError, 'get key')
          await rejectsInvalid(store.list('s', { after: big }), RangeError, 'list after')
          await rejectsInvalid(store.fenceOf(big), RangeError, 'fenceOf scope')
        }
        assert.deepEqual(await snapshot(), before)
      } finally {
        await store.close()
      }
    })
  })
}

describe('files SQLite or fencing cannot use', () => {
  const dir = tempDir()

  test('a file that is not a database is BACKEND and is left as it was', async () => {
    const file = path.join(dir, 'notes.db')
    const text = Buffer.from('these are my notes, not a database\n'.repeat(200))
    fs.writeFileSync(file, text)
    await assert.rejects(open(`sqlite:${file}`), { code: 'BACKEND', name: 'BackendError' })
    assert.deepEqual(fs.readFileSync(file), text)
  })

  test('a database from a newer version of fencing is BACKEND and is left as it was', async () => {
    const file = path.join(dir, 'newer.db')
    const store = await open(`sqlite:${file}`)
    await store.nextToken('s')
    await store.close()
    // SQLite's header keeps PRAGMA user_version (our schema version) as a
    // big-endian u32 at byte 60: pretend a future fencing wrote the file.
    const bytes = fs.readFileSync(file)
    assert.ok(bytes.subarray(0, 16).toString('latin1').startsWith('SQLite format 3'))
    bytes.writeUInt32BE(99, 60)
    fs.writeFileSync(file, bytes)
    await assert.rejects(open(`sqlite:${file}`), (e) => {
      assert.equal(e.code, 'BACKEND')
      assert.equal(e.name, 'BackendError')
      assert.match(e.message, /schema version 99/)
      return true
    })
    assert.deepEqual(fs.readFileSync(file), bytes)
  })
})
