/* fencing_hold: a lease kept alive by the core's guard, ended with one
 * verdict (docs/semantics.md, "Ending a held lease"), its loss callback
 * called on the keep-alive thread, and every NULL refused. */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "check.h"

#define TTL_MS 60000

static fencing_store *open_store(const char *url) {
  fencing_store *store = NULL;
  CHECK_OK(fencing_store_open(url, &store));
  return store;
}

static void held_to_the_end_is_released(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  fencing_lease lease;
  bool attach = true;
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_hold_check(hold));
  CHECK_OK(fencing_hold_lease(hold, &lease));
  CHECK_U64(lease.token, 1);
  CHECK_STR(lease.holder, "a");
  CHECK_OK(fencing_hold_finish(hold, false, &attach));
  CHECK(!attach);
  fencing_metrics m;
  CHECK_OK(fencing_metrics_snapshot(store, &m));
  CHECK_U64(m.releases, 1);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "job", &info));
  CHECK(!info.has_lease);
  fencing_store_free(store);
}

static void a_takeover_is_a_loss_naming_the_new_holder(bool work_failed) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  fencing_lease b;
  bool attach = !work_failed;
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_advance_clock(store, TTL_MS + 1));
  CHECK_OK(fencing_acquire(store, "job", "b", TTL_MS, &b));
  /* No renewal ran yet: only the end can see it. */
  CHECK_OK(fencing_hold_check(hold));
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_finish(hold, work_failed, &attach));
  fencing_error e;
  CHECK_OK(fencing_last_error(&e));
  CHECK_U64(e.current_token, 2);
  CHECK_STR(e.current_holder, "b");
  CHECK(attach == work_failed);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "job", &info));
  CHECK(info.has_lease && info.lease.token == 2);
  fencing_store_free(store);
}

static void a_closed_store_ends_the_hold_with_closed(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = NULL;
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_OK(fencing_store_close(store));
  /* The attach flag is optional. */
  CHECK_STATUS(FENCING_CLOSED, fencing_hold_finish(hold, true, NULL));
  fencing_store_free(store);
}

static atomic_int lost_calls;
static atomic_int lost_status;

static void on_lost(fencing_status status, void *user_data) {
  atomic_store(&lost_status, (int)status);
  atomic_fetch_add((atomic_int *)user_data, 1);
}

static void the_callback_reports_a_loss_seen_by_the_keep_alive(void) {
  fencing_store *store = open_store("memory:");
  fencing_hold *hold = NULL;
  fencing_lease lease, b;
  bool released = false;
  CHECK_OK(fencing_hold_start(store, "job", "a", 300, 0, on_lost, &lost_calls, &hold));
  CHECK_OK(fencing_hold_lease(hold, &lease));
  /* Another party ends the lease and takes the scope: the next renewal
   * fails for good and the keep-alive thread calls back. */
  CHECK_OK(fencing_release(store, "job", lease.token, &released));
  CHECK_OK(fencing_acquire(store, "job", "b", TTL_MS, &b));
  struct timespec nap = {0, 5 * 1000 * 1000};
  for (int i = 0; i < 6000 && atomic_load(&lost_calls) == 0; i++) {
    nanosleep(&nap, NULL);
  }
  CHECK(atomic_load(&lost_calls) == 1);
  CHECK(atomic_load(&lost_status) == FENCING_LEASE_LOST);
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_check(hold));
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_finish(hold, false, NULL));
  fencing_error e;
  CHECK_OK(fencing_last_error(&e));
  CHECK_U64(e.current_token, 2);
  CHECK_STR(e.current_holder, "b");
  CHECK(atomic_load(&lost_calls) == 1);
  fencing_store_free(store);
}

static void the_hold_outlives_its_store_handle(void) {
  fencing_store *store = open_store("memory:");
  fencing_hold *hold = NULL;
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  fencing_store_free(store);
  CHECK_OK(fencing_hold_check(hold));
  CHECK_OK(fencing_hold_finish(hold, false, NULL));
}

static void bad_input_changes_nothing(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = (fencing_hold *)&hold; /* must stay untouched */
  fencing_hold *const sentinel = hold;
  fencing_lease lease;
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_start(NULL, "job", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_start(store, NULL, "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_start(store, "job", NULL, TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, NULL));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_hold_start(store, "\xff", "a", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_hold_start(store, "job", "a", 0, 0, NULL, NULL, &hold));
  CHECK(hold == sentinel);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_check(NULL));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_lease(NULL, &lease));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_finish(NULL, false, NULL));
  fencing_hold_free(NULL);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "job", &info));
  CHECK_U64(info.counter, 0);

  /* Held: LEASE_HELD at once, TIMEOUT after a wait; a free releases. */
  fencing_hold *first = NULL;
  CHECK_OK(fencing_hold_start(store, "job", "a", TTL_MS, 0, NULL, NULL, &first));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_hold_lease(first, NULL));
  CHECK_STATUS(FENCING_LEASE_HELD, fencing_hold_start(store, "job", "b", TTL_MS, 0, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_TIMEOUT, fencing_hold_start(store, "job", "b", TTL_MS, 10, NULL, NULL, &hold));
  CHECK(hold == sentinel);
  fencing_hold_free(first);
  CHECK_OK(fencing_scope_status(store, "job", &info));
  CHECK(!info.has_lease);
  fencing_store_free(store);
}

static atomic_int kept_lost_calls;

static void a_lease_acquired_then_kept_alive_outlives_its_ttl(void) {
  fencing_store *store = open_store("memory:");
  fencing_lease lease, now, b;
  fencing_hold *hold = NULL;
  bool released = false;
  CHECK_OK(fencing_acquire(store, "kept", "a", 300, &lease));
  CHECK_OK(fencing_keep_alive(store, &lease, NULL, NULL, &hold));
  /* Past its TTL in real time: only renewals keep it. */
  struct timespec nap = {0, 700 * 1000 * 1000};
  nanosleep(&nap, NULL);
  CHECK_OK(fencing_hold_check(hold));
  CHECK_OK(fencing_hold_lease(hold, &now));
  CHECK_U64(now.token, lease.token);
  CHECK_STR(now.holder, "a");
  CHECK_STATUS(FENCING_LEASE_HELD, fencing_acquire(store, "kept", "b", TTL_MS, &b));
  CHECK_OK(fencing_hold_finish(hold, false, NULL));
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "kept", &info));
  CHECK(!info.has_lease);

  /* Ended behind its back: the callback reports the loss. */
  CHECK_OK(fencing_acquire(store, "kept", "c", 300, &lease));
  CHECK_OK(fencing_keep_alive(store, &lease, on_lost, &kept_lost_calls, &hold));
  CHECK_OK(fencing_release(store, "kept", lease.token, &released));
  CHECK(released);
  struct timespec tick = {0, 5 * 1000 * 1000};
  for (int i = 0; i < 6000 && atomic_load(&kept_lost_calls) == 0; i++) {
    nanosleep(&tick, NULL);
  }
  CHECK(atomic_load(&kept_lost_calls) == 1);
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_hold_check(hold));
  fencing_hold_free(hold);
  fencing_store_free(store);
}

static void a_cancelled_hold_wait_takes_no_lease(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_cancel *cancel = fencing_cancel_new();
  REQUIRE(cancel != NULL);
  fencing_hold *hold = NULL, *first = NULL;
  CHECK_OK(fencing_hold_start_cancellable(store, "job", "a", TTL_MS, 1000, cancel, NULL, NULL, &first));
  CHECK_OK(fencing_hold_check(first));
  CHECK_STATUS(FENCING_TIMEOUT,
               fencing_hold_start_cancellable(store, "job", "b", TTL_MS, 10, cancel, NULL, NULL, &hold));
  CHECK(hold == NULL);
  fencing_cancel_fire(cancel);
  /* Fired: TIMEOUT at once, even for a free scope, and no lease. */
  CHECK_STATUS(FENCING_TIMEOUT,
               fencing_hold_start_cancellable(store, "free", "b", TTL_MS, 60000, cancel, NULL, NULL, &hold));
  CHECK(hold == NULL);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "free", &info));
  CHECK_U64(info.counter, 0);
  CHECK_OK(fencing_hold_finish(first, false, NULL));
  fencing_cancel_free(cancel);
  fencing_store_free(store);
}

static void a_bad_lease_to_keep_alive_changes_nothing(void) {
  fencing_store *store = open_store("memory:?clock=manual");
  fencing_hold *hold = (fencing_hold *)&hold; /* must stay untouched */
  fencing_hold *const sentinel = hold;
  fencing_lease lease;
  CHECK_OK(fencing_acquire(store, "job", "a", TTL_MS, &lease));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_keep_alive(NULL, &lease, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_keep_alive(store, NULL, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_keep_alive(store, &lease, NULL, NULL, NULL));
  fencing_lease bad = lease;
  bad.token = 0;
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_keep_alive(store, &bad, NULL, NULL, &hold));
  bad = lease;
  memset(bad.scope, 'x', sizeof bad.scope); /* no NUL inside */
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_keep_alive(store, &bad, NULL, NULL, &hold));
  bad = lease;
  bad.holder[0] = (char)0xff;
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_keep_alive(store, &bad, NULL, NULL, &hold));
  fencing_cancel *cancel = fencing_cancel_new();
  CHECK_STATUS(FENCING_NULL_PARAMETER,
               fencing_hold_start_cancellable(store, "job", "b", TTL_MS, 10, NULL, NULL, NULL, &hold));
  CHECK_STATUS(FENCING_NULL_PARAMETER,
               fencing_hold_start_cancellable(store, "job", "b", TTL_MS, 10, cancel, NULL, NULL, NULL));
  fencing_cancel_free(cancel);
  CHECK(hold == sentinel);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "job", &info));
  CHECK(info.has_lease && info.lease.token == lease.token && info.counter == 1);
  fencing_store_free(store);
}

int main(void) {
  held_to_the_end_is_released();
  a_takeover_is_a_loss_naming_the_new_holder(false);
  a_takeover_is_a_loss_naming_the_new_holder(true);
  a_closed_store_ends_the_hold_with_closed();
  the_callback_reports_a_loss_seen_by_the_keep_alive();
  the_hold_outlives_its_store_handle();
  bad_input_changes_nothing();
  a_lease_acquired_then_kept_alive_outlives_its_ttl();
  a_cancelled_hold_wait_takes_no_lease();
  a_bad_lease_to_keep_alive_changes_nothing();
  return check_summary();
}
