'use strict'
// The TypeScript declarations: a typed example (with @ts-expect-error lines
// that must stay errors) compiles with `tsc --noEmit`, strict, no skipLibCheck.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const path = require('node:path')

const ROOT = path.resolve(__dirname, '..')

test('tsc --noEmit over the typed examples', { timeout: 120_000 }, () => {
  const tsc = require.resolve('typescript/bin/tsc')
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'examples/tsconfig.json')], { encoding: 'utf8' })
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`)
})
