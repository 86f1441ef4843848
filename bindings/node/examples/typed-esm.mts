// The ESM flavour: named imports and the default export are typed too.
import fencing, { open, type ScopeStatus } from 'fencing-tokens'

const store = await open('memory:')
const status: ScopeStatus = await store.status('s')
const counter: bigint = status.counter
const max: bigint = fencing.MAX_TOKEN
console.log(counter, max, status.lease?.holder)
await store.close()
