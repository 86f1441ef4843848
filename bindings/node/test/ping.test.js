'use strict'
// store.ping(): the core's answer, with the usual error classes.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const Better = require('better-sqlite3')
const { open, ClosedError, BackendError } = require('fencing-tokens')
const { backends, tempDir, sqliteUrl, postgresOrSkip, freshSchema } = require('./helpers')

for (const [name, url] of backends()) {
  test(`${name}: ping resolves while open, CLOSED after close`, async () => {
    const store = await open(url())
    assert.equal(await store.ping(), undefined)
    await store.close()
    await assert.rejects(store.ping(), (e) => e instanceof ClosedError && e.code === 'CLOSED')
  })
}

test('sqlite: ping refuses a file whose schema is older than this build', async () => {
  const url = sqliteUrl(tempDir())
  const store = await open(url)
  try {
    await store.ping()
    const db = new Better(url.slice('sqlite:'.length))
    const version = db.pragma('user_version', { simple: true })
    db.pragma(`user_version = ${version - 1}`)
    await assert.rejects(store.ping(), (e) =>
      e instanceof BackendError && e.kind === 'refused' && /fencing migrate/.test(e.message))
    db.pragma(`user_version = ${version}`)
    db.close()
    await store.ping()
  } finally {
    await store.close()
  }
})

const pg = postgresOrSkip(test)
if (pg !== null) {
  test('postgres: ping resolves on a current schema, CLOSED after close', async () => {
    const store = await open(`${pg}?schema=${freshSchema('ping')}`)
    await store.ping()
    await store.close()
    await assert.rejects(store.ping(), ClosedError)
  })
}
