'use strict'
// The store's own record (docs/operations.md): a snapshot of recent
// rejections and last writers, shared by every handle on the store.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { open, StaleTokenError } = require('fencing-tokens')

test('events() from another handle shows the rejection and the last writer, never values', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencing-events-'))
  const url = `sqlite:${path.join(dir, 'e.db')}`
  const writer = await open(url)
  const operator = await open(url)
  try {
    await writer.put('r:7', 'report', 'B', { token: 2n, holder: 'worker-b' })
    await assert.rejects(writer.put('r:7', 'report', 'SECRET', { token: 1n, holder: 'worker-a' }), StaleTokenError)
    const ev = await operator.events()
    assert.equal(ev.rejections.length, 1)
    const [r] = ev.rejections
    assert.deepEqual(
      { code: r.code, scope: r.scope, key: r.key, presented: r.presented, current: r.current },
      { code: 'STALE_TOKEN', scope: 'r:7', key: 'report', presented: 1n, current: 2n })
    assert.deepEqual([r.holder, r.seq, r.suppressed, r.id], ['worker-a', null, 0n, 1n])
    assert.ok(r.at instanceof Date)
    assert.equal(ev.lastWrites.length, 1)
    const [w] = ev.lastWrites
    assert.deepEqual([w.scope, w.holder, w.token], ['r:7', 'worker-b', 2n])
    assert.ok(w.at instanceof Date)
    assert.ok(!JSON.stringify(ev, (_, v) => (typeof v === 'bigint' ? String(v) : v)).includes('SECRET'))
    assert.deepEqual(await operator.events({ scope: 'other', limit: 1 }), { rejections: [], lastWrites: [] })
    // The operator's handle counted nothing itself: the record is the store's.
    assert.equal(operator.metrics().staleRejections, 0n)
  } finally {
    await writer.close()
    await operator.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('events() refuses bad options with INVALID_ARGUMENT', async () => {
  const store = await open('memory:')
  try {
    for (const options of [{ limit: 0 }, { limit: 257 }, { limit: -1 }, { limit: 1.5 }, { scope: '' }, { scope: 7 }, { nope: 1 }, 'x']) {
      await assert.rejects(store.events(options), (e) => e.code === 'INVALID_ARGUMENT', JSON.stringify(options))
    }
  } finally {
    await store.close()
  }
})
