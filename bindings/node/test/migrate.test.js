'use strict'
// migrate(url): the schema without a store (deploy time), so that plain SQL
// checks (`INSERT INTO fencing_check`, `fencing.check`) work before any
// process opened a store.

const { describe, test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const Database = require('better-sqlite3')
const pg = require('pg')
const fencing = require('fencing-tokens')
const { tempDir, postgresOrSkip, freshSchema } = require('./helpers.js')

describe('migrate', () => {
  test('makes a SQLite file that fencing_check can use, idempotently', async () => {
    const file = path.join(tempDir(), 'deploy.db')
    await fencing.migrate(`sqlite:${file}`)
    await fencing.migrate(`sqlite:${file}`)
    const db = new Database(file)
    db.prepare("INSERT INTO fencing_check (scope, token) VALUES ('s', 2)").run()
    assert.throws(
      () => db.prepare("INSERT INTO fencing_check (scope, token) VALUES ('s', 1)").run(),
      (e) => fencing.fromSqliteError(e) instanceof fencing.StaleTokenError,
    )
    db.close()
    const store = await fencing.open(`sqlite:${file}`)
    assert.equal(await store.fenceOf('s'), 2n)
    await store.close()
    await fencing.migrate('memory:')
  })

  test('refuses what open refuses, and leaves a foreign file alone', async () => {
    await assert.rejects(fencing.migrate('sqlite://x.db'), { code: 'INVALID_ARGUMENT', name: 'RangeError' })
    await assert.rejects(fencing.migrate(undefined), { code: 'INVALID_ARGUMENT', name: 'TypeError' })
    const file = path.join(tempDir(), 'foreign.db')
    fs.writeFileSync(file, 'not a database, not even close to one')
    await assert.rejects(fencing.migrate(`sqlite:${file}`), { code: 'BACKEND' })
    assert.equal(fs.readFileSync(file, 'utf8'), 'not a database, not even close to one')
  })
})

describe('migrate on PostgreSQL', () => {
  const base = postgresOrSkip(test)
  if (base === null) return
  test('makes a schema that fencing.check can use before any store opened it', async () => {
    const schema = freshSchema('migrate')
    await fencing.migrate(`${base}?schema=${schema}`)
    await fencing.migrate(`${base}?schema=${schema}`)
    const client = new pg.Client({ connectionString: base })
    await client.connect()
    try {
      await client.query(`SELECT "${schema}".check($1, $2)`, ['s', 2])
      await assert.rejects(client.query(`SELECT "${schema}".check($1, $2)`, ['s', 1]), (e) => {
        assert.ok(fencing.fromPostgresError(e) instanceof fencing.StaleTokenError)
        return true
      })
    } finally {
      await client.end()
    }
  })
})
