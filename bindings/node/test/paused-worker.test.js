'use strict'
// The paused-worker story with a real child process on sqlite: the child
// holds a lease, is stopped (SIGSTOP) past its TTL, this process acquires
// and writes, the child is continued (SIGCONT) and its write is rejected
// with STALE_TOKEN while the newer state stays. The story bounds itself in
// time and always reaps the child (examples/paused-worker.js).

const { test } = require('node:test')
const assert = require('node:assert/strict')
const path = require('node:path')
const { story, holds } = require('../examples/paused-worker.js')
const { tempDir } = require('./helpers.js')

const unixOnly = process.platform === 'win32' && 'SIGSTOP and SIGCONT are unix signals'

test('a paused worker is fenced off; the newer state stays', { timeout: 60_000, skip: unixOnly }, async () => {
  const r = await story(path.join(tempDir(), 'fence.db'))
  assert.equal(r.a.rejected, 'STALE_TOKEN', `worker A: ${r.a.rejected ?? 'accepted'}`)
  assert.equal(r.a.staleTokenError, true)
  assert.equal(r.a.token, 1n)
  assert.equal(BigInt(r.a.presented), 1n)
  assert.equal(r.b.token, 2n)
  assert.equal(BigInt(r.a.current), 2n)
  assert.deepEqual(r.stored, { value: "B's report", token: 2n, version: 1n })
  assert.equal(r.fence, 2n)
  assert.deepEqual(r.exit, { code: 0, signal: null })
  assert.ok(holds(r))
})

test('the story check fails when the stale write is accepted', () => {
  const r = {
    a: { token: 1n, accepted: '2' },
    b: { token: 2n, version: 1n },
    stored: { value: "A's report", token: 1n, version: 2n },
    fence: 2n,
    exit: { code: 0, signal: null },
  }
  assert.equal(holds(r), false)
})
