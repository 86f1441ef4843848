'use strict'
// Packaging as a user would: `npm pack`, `npm install` of that tarball into
// a fresh project (no network: the tarball has no dependencies), then, in
// that project, the paused-worker story through `require('fencing-tokens')`, an
// ESM import, and `tsc` over the typed example against the installed types.

const { test } = require('node:test')
const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { tempDir } = require('./helpers.js')

const ROOT = path.resolve(__dirname, '..')

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 120_000 })
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

test('npm pack, npm install the tarball, and use it', { timeout: 300_000 }, () => {
  const work = tempDir('fencing-pack-')
  const packed = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', work], ROOT))[0]
  const files = packed.files.map((f) => f.path).sort()
  for (const f of ['fencing.js', 'fencing.mjs', 'fencing.d.ts', 'index.js', 'index.d.ts', 'package.json', 'README.md']) {
    assert.ok(files.includes(f), `${f} is in the package: ${files}`)
  }
  assert.ok(files.some((f) => /^fencing\..*\.node$/.test(f)), 'the native addon is in the package')
  assert.ok(!files.some((f) => /^(src|test|bench|node_modules)\//.test(f) || f.endsWith('.rs')), `no sources or tests: ${files}`)

  const app = path.join(work, 'app')
  fs.mkdirSync(app)
  fs.writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'user-app', version: '1.0.0', private: true }))
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(work, packed.filename)], app)
  assert.ok(fs.existsSync(path.join(app, 'node_modules/fencing-tokens/package.json')))

  // The story, as a user's script that requires the installed package.
  fs.copyFileSync(path.join(ROOT, 'examples/paused-worker.js'), path.join(app, 'story.js'))
  const story = run(process.execPath, ['story.js', path.join(app, 'fence.db')], app)
  assert.match(story, /worker A woke and wrote with 1: STALE_TOKEN \(fence at 2\)/)
  assert.match(story, /stored: "B's report" with token 2/)

  // ESM, from the installed package.
  fs.writeFileSync(
    path.join(app, 'esm.mjs'),
    [
      "import { open, StaleTokenError, MAX_TOKEN } from 'fencing-tokens'",
      "const store = await open('memory:?jumps=unbounded')",
      "await store.put('s', 'k', 'new', { token: MAX_TOKEN })",
      "try { await store.put('s', 'k', 'old', { token: 1n }); console.log('accepted') }",
      "catch (e) { console.log(e instanceof StaleTokenError ? `stale ${e.current}` : e) }",
      'await store.close()',
    ].join('\n'),
  )
  assert.equal(run(process.execPath, ['esm.mjs'], app).trim(), 'stale 9223372036854775807')

  // The installed types, checked by tsc in the user's project.
  fs.copyFileSync(path.join(ROOT, 'examples/typed.ts'), path.join(app, 'typed.ts'))
  fs.writeFileSync(
    path.join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'es2022',
        module: 'node16',
        moduleResolution: 'node16',
        types: ['node'],
        typeRoots: [path.join(ROOT, 'node_modules/@types')],
        skipLibCheck: false,
      },
      files: ['typed.ts'],
    }),
  )
  run(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], app)
})
