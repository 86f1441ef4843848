'use strict'
// Every code and detail the core lists reaches JavaScript: a class of the
// core's name, exported from both entry points and declared in fencing.d.ts
// with each detail, and an error built by the addon carrying each one.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const fencing = require('fencing-tokens')
const native = require('../index.js')

const ROOT = path.resolve(__dirname, '..')
const SCHEMA = native.errorSchema()
const SQLSTATES = {
  STALE_TOKEN: 'FN001',
  SEQUENCE_OUT_OF_ORDER: 'FN002',
  VERSION_MISMATCH: 'FN003',
  NOT_FOUND: 'FN004',
  LEASE_HELD: 'FN005',
  LEASE_LOST: 'FN006',
}

test('the schema lists every code once', () => {
  const codes = SCHEMA.map((e) => e.code)
  assert.equal(new Set(codes).size, 11)
  for (const code of Object.keys(SQLSTATES)) assert.ok(codes.includes(code), code)
})

test('every code has its class by the core\'s name, in CommonJS and ESM', async () => {
  const esm = await import('fencing-tokens')
  for (const { code, name } of SCHEMA) {
    const cls = fencing[name]
    assert.equal(typeof cls, 'function', `${name} is not exported`)
    assert.equal(esm[name], cls, `${name} is not exported by fencing.mjs`)
    assert.equal(cls.prototype.code, code)
    assert.equal(cls.prototype.name, name)
  }
})

test('fencing.d.ts declares every class with every detail', () => {
  const dts = fs.readFileSync(path.join(ROOT, 'fencing.d.ts'), 'utf8')
  for (const { code, name, fields } of SCHEMA) {
    const start = dts.indexOf(`export declare class ${name} extends FencingError {`)
    assert.ok(start >= 0, `${name} is not declared`)
    const body = dts.slice(start, dts.indexOf('\n}', start))
    assert.ok(body.includes(`readonly code: '${code}'`), name)
    for (const field of fields) assert.match(body, new RegExp(`readonly ${field}: `), `${name}.${field}`)
  }
})

test('a backend failure carries its kind', async () => {
  const { code, fields } = SCHEMA.find((e) => e.name === 'BackendError')
  assert.equal(code, 'BACKEND')
  assert.deepEqual(fields, ['kind'])
  // A file that is not an SQLite database: corrupt.
  const os = require('node:os')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fencing-kind-'))
  const file = path.join(dir, 'not-a-db')
  fs.writeFileSync(file, Buffer.alloc(8192, 'x'))
  try {
    await assert.rejects(fencing.open(`sqlite:${file}`), (e) => {
      assert.ok(e instanceof fencing.BackendError, String(e))
      assert.equal(e.code, 'BACKEND')
      assert.equal(e.kind, 'corrupt')
      return true
    })
  } finally {
    fs.rmSync(dir, { recursive: true, force: true })
  }
})

test('every detail arrives with its value', () => {
  const jsonName = (field) => field.replace(/[A-Z]/g, (c) => '_' + c.toLowerCase())
  for (const { code, name, fields, kinds } of SCHEMA) {
    if (!(code in SQLSTATES)) {
      // No SQLSTATE to build one with: BACKEND's kind is checked above.
      assert.deepEqual(fields, code === 'BACKEND' ? ['kind'] : [], code)
      continue
    }
    const detail = {}
    const want = {}
    fields.forEach((field, i) => {
      const kind = kinds[i]
      if (kind.startsWith('text')) detail[jsonName(field)] = want[field] = `${field}-${i}`
      else if (kind.startsWith('bigint')) {
        detail[jsonName(field)] = String(2n ** 53n + 1n + BigInt(i))
        want[field] = 2n ** 53n + 1n + BigInt(i)
      } else {
        assert.equal(kind, 'ms')
        detail[jsonName(field)] = want[field] = 1500 + i
      }
    })
    const e = fencing.errorFromSqlstate(SQLSTATES[code], JSON.stringify(detail))
    assert.ok(e instanceof fencing[name], name)
    for (const field of fields) assert.equal(e[field], want[field], `${name}.${field}`)
  }
})
