'use strict'
// The user's side of fencing your own SQLite tables (docs/sqlite.md): each
// standard Node SQLite driver behind one small interface, and the fenced
// update the tests and their child processes run. Nothing of fencing here.

/** The drivers this Node has: [name, open | null, reason when null]. */
function drivers() {
  const out = []
  const Better = require('better-sqlite3')
  out.push(['better-sqlite3', (path) => wrap(new Better(path)), null])
  let sqlite = null
  try {
    sqlite = require('node:sqlite')
  } catch (e) {
    out.push(['node:sqlite', null, `node:sqlite is not in Node ${process.version} (${e.code})`])
  }
  if (sqlite !== null) out.push(['node:sqlite', (path) => wrap(new sqlite.DatabaseSync(path)), null])
  return out
}

function open(name, path) {
  const found = drivers().find(([n]) => n === name)
  if (!found || found[1] === null) throw new Error(`no driver ${name}`)
  return found[1](path)
}

// Both drivers have exec, prepare(sql).run(...args) and .get(...args).
function wrap(db) {
  db.exec('PRAGMA busy_timeout = 10000')
  return {
    exec: (sql) => db.exec(sql),
    run: (sql, ...args) => db.prepare(sql).run(...args),
    get: (sql, ...args) => db.prepare(sql).get(...args),
    close: () => db.close(),
  }
}

/**
 * The check and the user's UPDATE in one BEGIN IMMEDIATE transaction; the
 * UPDATE first, the order a careless caller would use, so that only the
 * rollback keeps a stale write out. Throws the driver's error.
 */
function fencedUpdate(db, token, body) {
  db.exec('BEGIN IMMEDIATE')
  try {
    db.run("UPDATE report_state SET body = ?, token = ?, history = history || ',' || ? WHERE id = 7",
      body, token, token)
    db.run("INSERT INTO fencing_check (scope, token) VALUES ('report:7', ?)", token)
  } catch (e) {
    db.exec('ROLLBACK')
    throw e
  }
  db.exec('COMMIT')
}

module.exports = { drivers, open, fencedUpdate }
