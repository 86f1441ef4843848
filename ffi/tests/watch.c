/* fencing_watch: who holds a scope's lease, live, through the C ABI. The
 * lease as it is, then each change made from another handle (acquire,
 * renew, release, expiry) while a fencing_watch_next waits in another
 * thread; a wait with no change is FENCING_OK with changed false; a second
 * call while one waits (it takes its turn), a fired cancel flag, a closed
 * store; and every bad argument refused with nothing consumed.
 *
 *   watch memory|sqlite|postgres   postgres: a fresh schema on
 *                                  FENCING_TEST_PG_URL (skipped, exit 0,
 *                                  without it unless FENCING_REQUIRE_PG=1)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* Far longer than every wait below: a lease that must not expire. */
#define TTL_MS 120000
/* A wait that only a change (or its absence, by a hang) ends: bounded far
 * above any wake-up or back-off, so a slow machine is not a failure. */
#define LONG_MS 60000

static void sleep_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static uint64_t now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

struct waiter {
  const fencing_watch *watch;
  uint64_t timeout_ms;
  const fencing_cancel *cancel; /* NULL: fencing_watch_next */
  fencing_status status;
  fencing_holding holding;
  bool changed;
  pthread_t thread;
};

static void *wait_next(void *arg) {
  struct waiter *w = arg;
  w->status = w->cancel ? fencing_watch_next_cancellable(w->watch, w->timeout_ms, w->cancel,
                                                         &w->holding, &w->changed)
                        : fencing_watch_next(w->watch, w->timeout_ms, &w->holding, &w->changed);
  return NULL;
}

/* Starts a long fencing_watch_next on its own thread, and lets it read and
 * fall asleep before the next change. A call from this thread meanwhile
 * waits for its turn within its own timeout, and finds nothing new: no
 * change is made until this returns, so either order of the two calls
 * consumes nothing. */
static void start_waiting(struct waiter *w, const fencing_watch *watch,
                          const fencing_cancel *cancel) {
  memset(w, 0, sizeof *w);
  w->watch = watch;
  w->timeout_ms = LONG_MS;
  w->cancel = cancel;
  REQUIRE(pthread_create(&w->thread, NULL, wait_next, w) == 0);
  sleep_ms(200);
  fencing_holding h;
  bool changed = true;
  CHECK_OK(fencing_watch_next(watch, 100, &h, &changed));
  CHECK(!changed);
  changed = true;
  CHECK_OK(fencing_watch_next(watch, 0, &h, &changed));
  CHECK(!changed);
}

static void join(struct waiter *w) { REQUIRE(pthread_join(w->thread, NULL) == 0); }

static void sees_each_change(fencing_store *changer, fencing_store *watcher) {
  fencing_watch *watch = NULL;
  CHECK_OK(fencing_watch_open(watcher, "s", &watch));
  REQUIRE(watch != NULL);

  /* The lease as it is: nobody holds it. */
  fencing_holding h;
  bool changed = false;
  CHECK_OK(fencing_watch_next(watch, LONG_MS, &h, &changed));
  CHECK(changed);
  CHECK_STR(h.scope, "s");
  CHECK(!h.has_lease);
  CHECK_U64(h.lease.token, 0);

  /* Nothing changes: FENCING_OK, changed false, the holding left alone. */
  memset(&h, 0x5a, sizeof h);
  changed = true;
  uint64_t began = now_ms();
  CHECK_OK(fencing_watch_next(watch, 150, &h, &changed));
  CHECK(!changed);
  CHECK(now_ms() - began >= 140);
  CHECK(h.scope[0] == 0x5a && h.lease.token == 0x5a5a5a5a5a5a5a5aull);
  CHECK_OK(fencing_watch_next(watch, 0, &h, &changed));
  CHECK(!changed);

  /* Taken by another handle while the watch waits in another thread. */
  struct waiter w;
  start_waiting(&w, watch, NULL);
  fencing_lease a;
  CHECK_OK(fencing_acquire(changer, "s", "worker-a", TTL_MS, &a));
  join(&w);
  CHECK_OK(w.status);
  CHECK(w.changed);
  CHECK_STR(w.holding.scope, "s");
  CHECK(w.holding.has_lease);
  CHECK_U64(w.holding.lease.token, a.token);
  CHECK_STR(w.holding.lease.holder, "worker-a");
  CHECK_STR(w.holding.lease.scope, "s");
  CHECK_U64(w.holding.lease.ttl_ms, TTL_MS);
  CHECK(w.holding.lease.remaining_ms > 0 && w.holding.lease.remaining_ms <= TTL_MS);
  CHECK(w.holding.lease.expires_at_ms > 1600000000000ull);
  uint64_t first_expiry = w.holding.lease.expires_at_ms;

  /* Renewed: the same token, a later expiry. */
  sleep_ms(20);
  start_waiting(&w, watch, NULL);
  fencing_lease renewed;
  CHECK_OK(fencing_renew(changer, "s", a.token, TTL_MS, &renewed));
  join(&w);
  CHECK_OK(w.status);
  CHECK(w.changed && w.holding.has_lease);
  CHECK_U64(w.holding.lease.token, a.token);
  CHECK(w.holding.lease.expires_at_ms > first_expiry);

  /* Released: free again. */
  start_waiting(&w, watch, NULL);
  bool released = false;
  CHECK_OK(fencing_release(changer, "s", a.token, &released));
  CHECK(released);
  join(&w);
  CHECK_OK(w.status);
  CHECK(w.changed && !w.holding.has_lease);
  CHECK_STR(w.holding.scope, "s");

  /* A short lease (yet long enough for the waiting thread to read it on a
   * slow machine): taken, then expired with nobody touching the store. */
  start_waiting(&w, watch, NULL);
  fencing_lease b;
  CHECK_OK(fencing_acquire(changer, "s", "worker-b", 2000, &b));
  join(&w);
  CHECK_OK(w.status);
  CHECK(w.changed && w.holding.has_lease && w.holding.lease.token == b.token);
  CHECK(b.token > a.token);
  CHECK_OK(fencing_watch_next(watch, LONG_MS, &h, &changed));
  CHECK(changed && !h.has_lease);

  /* Bad arguments to next: refused before the wait, nothing consumed. */
  fencing_lease c;
  CHECK_OK(fencing_acquire(changer, "s", "worker-c", TTL_MS, &c));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_next(NULL, 0, &h, &changed));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_next(watch, LONG_MS, NULL, &changed));
  CHECK(strstr(last_message(), "out_holding") != NULL);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_next(watch, LONG_MS, &h, NULL));
  CHECK(strstr(last_message(), "out_changed") != NULL);
  CHECK_STATUS(FENCING_NULL_PARAMETER,
               fencing_watch_next_cancellable(watch, LONG_MS, NULL, &h, &changed));
  CHECK(strstr(last_message(), "cancel") != NULL);
  CHECK_OK(fencing_watch_next(watch, LONG_MS, &h, &changed));
  CHECK(changed && h.has_lease && h.lease.token == c.token);
  CHECK_STR(h.lease.holder, "worker-c");
  CHECK_OK(fencing_release(changer, "s", c.token, &released));
  CHECK_OK(fencing_watch_next(watch, LONG_MS, &h, &changed));
  CHECK(changed && !h.has_lease);

  /* Given up from another thread: as a timeout, long before it. */
  fencing_cancel *cancel = fencing_cancel_new();
  REQUIRE(cancel != NULL);
  began = now_ms();
  start_waiting(&w, watch, cancel);
  fencing_cancel_fire(cancel);
  join(&w);
  CHECK_OK(w.status);
  CHECK(!w.changed);
  CHECK(now_ms() - began < LONG_MS / 2);
  /* Already fired: at once. */
  changed = true;
  CHECK_OK(fencing_watch_next_cancellable(watch, LONG_MS, cancel, &h, &changed));
  CHECK(!changed);
  fencing_cancel_free(cancel);

  fencing_watch_free(watch);
}

static void bad_open(fencing_store *store) {
  fencing_watch *untouched = (fencing_watch *)&untouched;
  char big[FENCING_MAX_SCOPE_BYTES + 2];
  memset(big, 's', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_open(NULL, "s", &untouched));
  CHECK(strstr(last_message(), "store") != NULL);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_open(store, NULL, &untouched));
  CHECK(strstr(last_message(), "scope") != NULL);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_watch_open(store, "s", NULL));
  CHECK(strstr(last_message(), "out_watch") != NULL);
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_watch_open(store, "s\xff", &untouched));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_watch_open(store, "", &untouched));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_watch_open(store, big, &untouched));
  big[FENCING_MAX_SCOPE_BYTES] = '\0'; /* the longest scope is fine */
  fencing_watch *longest = NULL;
  CHECK_OK(fencing_watch_open(store, big, &longest));
  fencing_holding h;
  bool changed = false;
  CHECK_OK(fencing_watch_next(longest, LONG_MS, &h, &changed));
  CHECK(changed && !h.has_lease);
  CHECK_STR(h.scope, big);
  fencing_watch_free(longest);
  CHECK(untouched == (fencing_watch *)&untouched);
  fencing_watch_free(NULL);
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : "";
  char url[4096], dir[] = "/tmp/fencing-c-watch.XXXXXX";
  bool made_dir = false;
  if (strcmp(backend, "postgres") == 0) {
    const char *base = getenv("FENCING_TEST_PG_URL");
    if (base == NULL || base[0] == '\0') {
      const char *require = getenv("FENCING_REQUIRE_PG");
      if (require != NULL && strcmp(require, "1") == 0) {
        fprintf(stderr, "FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set\n");
        return 1;
      }
      printf("skipped: no PostgreSQL\n0 passed, 0 failed\n");
      return 0;
    }
    snprintf(url, sizeof url, "%s?schema=t_c_watch_%ld_%ld&pool_size=2", base, (long)getpid(),
             (long)time(NULL));
  } else if (strcmp(backend, "sqlite") == 0) {
    REQUIRE(mkdtemp(dir) != NULL);
    made_dir = true;
    snprintf(url, sizeof url, "sqlite:%s/watch.db", dir);
  } else if (strcmp(backend, "memory") == 0) {
    snprintf(url, sizeof url, "memory:");
  } else {
    fprintf(stderr, "usage: %s memory|sqlite|postgres\n", argv[0]);
    return 2;
  }

  fencing_store *changer = NULL, *watcher = NULL;
  REQUIRE(fencing_store_open(url, &changer) == FENCING_OK);
  /* memory: is one handle's store: the watch is on the same handle. */
  if (strcmp(backend, "memory") == 0) {
    watcher = changer;
  } else {
    REQUIRE(fencing_store_open(url, &watcher) == FENCING_OK);
  }

  sees_each_change(changer, watcher);
  bad_open(watcher);

  /* A watch keeps the store open for itself: its handle may go first. */
  fencing_watch *kept = NULL, *closing = NULL;
  CHECK_OK(fencing_watch_open(watcher, "kept", &kept));
  CHECK_OK(fencing_watch_open(watcher, "closing", &closing));
  fencing_holding h;
  bool changed = false;
  if (watcher != changer) {
    fencing_store *other = NULL;
    REQUIRE(fencing_store_open(url, &other) == FENCING_OK);
    fencing_watch *orphan = NULL;
    CHECK_OK(fencing_watch_open(other, "kept", &orphan));
    fencing_store_free(other);
    CHECK_OK(fencing_watch_next(orphan, LONG_MS, &h, &changed));
    CHECK(changed && !h.has_lease);
    fencing_watch_free(orphan);
  }
  CHECK_OK(fencing_watch_next(kept, LONG_MS, &h, &changed));
  CHECK(changed);

  /* A closed store ends every watch on it with CLOSED, and opens none. */
  CHECK_OK(fencing_store_close(watcher));
  CHECK_STATUS(FENCING_CLOSED, fencing_watch_next(closing, LONG_MS, &h, &changed));
  CHECK_STATUS(FENCING_CLOSED, fencing_watch_next(kept, 0, &h, &changed));
  fencing_watch *none = (fencing_watch *)&none;
  CHECK_STATUS(FENCING_CLOSED, fencing_watch_open(watcher, "s", &none));
  CHECK(none == (fencing_watch *)&none);
  fencing_watch_free(closing);
  fencing_watch_free(kept);

  if (watcher != changer) {
    fencing_store_free(watcher);
  }
  fencing_store_free(changer);
  if (made_dir) { /* the database and whatever files beside it it made */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
      char path[600];
      if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
      }
    }
    if (d != NULL) {
      closedir(d);
    }
    rmdir(dir);
  }
  printf("watch on %s: ", backend);
  return check_summary();
}
