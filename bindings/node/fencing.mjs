// ESM entry point: the same module as fencing.js (one native addon, one set
// of error classes, so `instanceof` works across both).
import fencing from './fencing.js'

export const {
  open,
  migrate,
  Store,
  Fence,
  HeldLease,
  parseToken,
  errorFromSqlstate,
  fromPostgresError,
  errorFromSqliteMessage,
  fromSqliteError,
  MAX_TOKEN,
  FencingError,
  StaleTokenError,
  SequenceOutOfOrderError,
  VersionMismatchError,
  NotFoundError,
  LeaseHeldError,
  LeaseLostError,
  TokenExhaustedError,
  InvalidArgumentError,
  TimeoutError,
  BackendError,
  ClosedError,
} = fencing

export default fencing
