/* Writes through a hold (fencing_hold_put and the rest): the lease's own
 * scope and token (docs/semantics.md, "Writing through a held lease"); after
 * a takeover STALE_TOKEN and nothing changes; a loss the keep-alive knows
 * writes nothing; every NULL and bad argument refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdbool.h>
#include <time.h>

#include "check.h"

#define TTL_MS 60000

static fencing_store *open_store(const char *url) {
  fencing_store *store = NULL;
  CHECK_OK(fencing_store_open(url, &store));
  return store;
}

/* The value stored under scope/key, or "" when there is none. */
static void value_of(fencing_store *store, const char *scope, const char *key, char *buf, size_t len) {
  fencing_entry *e = NULL;
  buf[0] = '\0';
  CHECK_OK(fencing_get(store, scope, key, NULL, &e));
  if (e != NULL) {
    size_t n = fencing_entry_value_len(e);
    if (n >= len) n = len - 1;
    memcpy(buf, fencing_entry_value(e), n);
    buf[n] = '\0';
    fencing_entry_free(e);
  }
}

static void writes_land_in_the_leases_scope(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  fencing_lease lease;
  fencing_receipt r;
  char buf[16];
  CHECK_OK(fencing_hold_start(store, "sc", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_hold_lease(hold, &lease));
  CHECK_OK(fencing_hold_put(hold, "k", (const uint8_t *)"v", 1, &r));
  CHECK_U64(r.version, 1);
  CHECK_U64(r.token, lease.token);
  value_of(store, "sc", "k", buf, sizeof buf);
  CHECK_STR(buf, "v");
  value_of(store, "other", "k", buf, sizeof buf);
  CHECK_STR(buf, "");

  fencing_op ops[2] = {
      {.kind = FENCING_OP_PUT, .key = "k2", .value = (const uint8_t *)"w", .value_len = 1},
      {.kind = FENCING_OP_DELETE, .key = "k"},
  };
  fencing_receipt rs[2];
  CHECK_OK(fencing_hold_apply(hold, ops, 2, rs));
  CHECK_U64(rs[0].version, 1);
  CHECK_U64(rs[1].version, 0);
  fencing_entry *e = NULL;
  CHECK_OK(fencing_hold_get(hold, "k2", &e));
  CHECK(e != NULL && fencing_entry_token(e) == lease.token);
  fencing_entry_free(e);
  CHECK_OK(fencing_hold_get(hold, "k", &e));
  CHECK(e == NULL);

  fencing_op cond = {.kind = FENCING_OP_PUT, .key = "k2", .value = (const uint8_t *)"x", .value_len = 1,
                     .has_expected_version = true, .expected_version = 7};
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_hold_execute(hold, &cond, &r));
  cond.expected_version = 1;
  CHECK_OK(fencing_hold_execute(hold, &cond, &r));
  CHECK_U64(r.version, 2);
  CHECK_OK(fencing_hold_delete(hold, "k2", &r));
  CHECK_U64(r.version, 0);
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_hold_delete(hold, "k2", &r));
  CHECK_OK(fencing_hold_claim(hold));
  uint64_t fence = 0;
  CHECK_OK(fencing_fence_of(store, "sc", &fence));
  CHECK_U64(fence, lease.token);
  CHECK_OK(fencing_hold_finish(hold, false, NULL));
  fencing_store_free(store);
}

static void after_a_takeover_a_write_is_stale(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  fencing_lease b;
  fencing_receipt r = {0, 0};
  char buf[16];
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_hold_put(hold, "k", (const uint8_t *)"old", 3, &r));
  CHECK_OK(fencing_advance_clock(store, TTL_MS));
  CHECK_OK(fencing_acquire(store, "job", "b", TTL_MS, &b));
  fencing_fence fb = {.token = b.token};
  CHECK_OK(fencing_claim(store, "job", &fb));
  CHECK_OK(fencing_hold_check(hold)); /* the keep-alive has not seen it */
  fencing_receipt untouched = {77, 77};
  r = untouched;
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_hold_put(hold, "k", (const uint8_t *)"new", 3, &r));
  CHECK(r.version == 77 && r.token == 77);
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_hold_delete(hold, "k", &r));
  fencing_entry *e = (fencing_entry *)&e;
  fencing_entry *const sentinel = e;
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_hold_get(hold, "k", &e));
  CHECK(e == sentinel);
  value_of(store, "job", "k", buf, sizeof buf);
  CHECK_STR(buf, "old");
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_finish(hold, true, NULL));
  fencing_store_free(store);
}

static void a_hold_that_knows_its_loss_writes_nothing(void) {
  /* Without eager fencing the takeover raises no fence: the store alone
   * would accept the old token, so only the hold's own check stops it. */
  fencing_store *store = open_store("memory:?eager_fencing=false");
  fencing_hold *hold = NULL;
  fencing_lease lease, b;
  fencing_receipt r;
  bool released = false;
  CHECK_OK(fencing_hold_start(store, "job", "a", 300, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_hold_lease(hold, &lease));
  CHECK_OK(fencing_release(store, "job", lease.token, &released));
  CHECK_OK(fencing_acquire(store, "job", "b", TTL_MS, &b));
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int i = 0; i < 12000 && fencing_hold_check(hold) == FENCING_OK; i++) {
    nanosleep(&nap, NULL);
  }
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_put(hold, "k", (const uint8_t *)"v", 1, &r));
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_claim(hold));
  uint64_t fence = 99;
  CHECK_OK(fencing_fence_of(store, "job", &fence));
  CHECK_U64(fence, 0);
  char buf[16];
  value_of(store, "job", "k", buf, sizeof buf);
  CHECK_STR(buf, "");
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_finish(hold, false, NULL));
  fencing_store_free(store);
}

static void bad_input_changes_nothing(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  fencing_receipt r;
  fencing_entry *e = NULL;
  fencing_op op = {.kind = 0, .key = "k"};
  CHECK_OK(fencing_hold_start(store, "sc", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_put(NULL, "k", (const uint8_t *)"v", 1, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_put(hold, NULL, (const uint8_t *)"v", 1, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_put(hold, "k", NULL, 1, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_put(hold, "k", (const uint8_t *)"v", 1, NULL));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_hold_put(hold, "\xff", (const uint8_t *)"v", 1, &r));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_hold_put(hold, "", (const uint8_t *)"v", 1, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_delete(NULL, "k", &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_delete(hold, NULL, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_execute(hold, NULL, &r));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_hold_execute(hold, &op, &r));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_hold_apply(hold, &op, 1, &r));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_hold_apply(hold, NULL, 0, NULL));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_claim(NULL));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_get(NULL, "k", &e));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_get(hold, "k", NULL));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_hold_get(hold, "\xc3", &e));
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "sc", &info));
  CHECK_U64(info.entries, 0);
  CHECK_OK(fencing_hold_finish(hold, false, NULL));
  fencing_store_free(store);
}

int main(void) {
  writes_land_in_the_leases_scope();
  after_a_takeover_a_write_is_stale();
  a_hold_that_knows_its_loss_writes_nothing();
  bad_input_changes_nothing();
  return check_summary();
}
