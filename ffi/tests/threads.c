/* Several threads share one store handle and race: for tokens, for writes
 * to one scope, and for one lease. Afterwards the store's state and metrics
 * must account for every call exactly, tokens must be unique, the lease must
 * never have had two holders at once, and each thread's last error must
 * have described its own rejections. Meant to run under ThreadSanitizer and
 * valgrind as well. `threads memory` or `threads sqlite`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#define THREADS 8

static fencing_store *store;
static int rounds;
static atomic_int inside;       /* threads inside the lease right now */
static atomic_int overlaps;     /* times two were inside at once */
static atomic_int bad_details;  /* rejections whose last error did not match */
static atomic_int bad_calls;    /* unexpected statuses */

typedef struct {
  int id;
  char holder[16];
  char key[16];
  uint64_t *tokens; /* from next_token, in order */
  int accepted, stale;
  uint64_t last_accepted;
  int acquired, conflicts;
} worker;

static void unexpected(const char *what, fencing_status st) {
  atomic_fetch_add(&bad_calls, 1);
  fprintf(stderr, "%s: %s (%s)\n", what, fencing_status_name(st), last_message());
}

static void *run(void *arg) {
  worker *w = arg;
  char value[64];
  for (int i = 0; i < rounds; i++) {
    uint64_t t = 0;
    fencing_status st = fencing_next_token(store, "race", &t);
    if (st != FENCING_OK) {
      unexpected("next_token", st);
      continue;
    }
    w->tokens[i] = t;

    /* Race the others to write: a newer token may already be the fence. */
    fencing_fence f = {.token = t, .holder = w->holder};
    fencing_receipt r;
    int n = snprintf(value, sizeof value, "%s wrote %llu", w->holder, (unsigned long long)t);
    st = fencing_put(store, "race", w->key, (const uint8_t *)value, (size_t)n, &f, &r);
    if (st == FENCING_OK) {
      w->accepted++;
      w->last_accepted = t;
      if (r.token != t) {
        atomic_fetch_add(&bad_details, 1);
      }
    } else if (st == FENCING_STALE_TOKEN) {
      fencing_error e;
      w->stale++;
      if (fencing_last_error(&e) != FENCING_OK || e.status != FENCING_STALE_TOKEN ||
          e.presented != t || e.current <= t || e.scope == NULL || strcmp(e.scope, "race") != 0) {
        atomic_fetch_add(&bad_details, 1);
      }
    } else {
      unexpected("put", st);
    }

    /* Race for the lease; its holder alone writes under it. */
    fencing_lease lease;
    st = fencing_acquire(store, "lease", w->holder, 60000, &lease);
    if (st == FENCING_OK) {
      w->acquired++;
      if (atomic_fetch_add(&inside, 1) != 0) {
        atomic_fetch_add(&overlaps, 1);
      }
      fencing_fence lf = {.token = lease.token};
      st = fencing_put(store, "lease", "data", (const uint8_t *)w->holder, strlen(w->holder), &lf, &r);
      if (st != FENCING_OK) {
        unexpected("put under the lease", st);
      }
      atomic_fetch_sub(&inside, 1);
      bool released = false;
      st = fencing_release(store, "lease", lease.token, &released);
      if (st != FENCING_OK || !released) {
        unexpected("release", st);
      }
    } else if (st == FENCING_LEASE_HELD) {
      fencing_error e;
      w->conflicts++;
      if (fencing_last_error(&e) != FENCING_OK || e.status != FENCING_LEASE_HELD ||
          e.holder == NULL || e.holder[0] != 't' || strcmp(e.holder, w->holder) == 0 ||
          e.token == 0) {
        atomic_fetch_add(&bad_details, 1);
      }
    } else {
      unexpected("acquire", st);
    }
  }
  return NULL;
}

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* A wait that another thread gives up (fencing_cancel_fire). */
typedef struct {
  fencing_cancel *cancel;
  fencing_status status;
} waiter;

static void *wait_cancellable(void *arg) {
  waiter *w = arg;
  fencing_lease l;
  w->status = fencing_acquire_wait_cancellable(store, "cancel", "waiter", 60000, 120000, w->cancel, &l);
  return NULL;
}

static void cancelled_wait(void) {
  fencing_lease held, other;
  fencing_scope_info info;
  CHECK_OK(fencing_acquire(store, "cancel", "holder", 3600000, &held));
  waiter w = {fencing_cancel_new(), FENCING_OK};
  REQUIRE(w.cancel != NULL);
  pthread_t t;
  REQUIRE(pthread_create(&t, NULL, wait_cancellable, &w) == 0);
  usleep(100 * 1000); /* into the wait */
  fencing_cancel_fire(w.cancel);
  /* Returns long before the wait's 120 s: the join would hang otherwise. */
  REQUIRE(pthread_join(t, NULL) == 0);
  CHECK(w.status == FENCING_TIMEOUT);
  CHECK_OK(fencing_scope_status(store, "cancel", &info));
  CHECK(info.has_lease && strcmp(info.lease.holder, "holder") == 0);
  CHECK_U64(info.counter, 1); /* the waiter took no token */
  /* A fired flag stays fired: a call given it sends no acquire at all, on a
   * held scope or a free one (a lease for a caller that gave up). */
  CHECK_STATUS(FENCING_TIMEOUT,
               fencing_acquire_wait_cancellable(store, "cancel", "late", 1000, 120000, w.cancel, &other));
  CHECK_STATUS(FENCING_TIMEOUT,
               fencing_acquire_wait_cancellable(store, "free", "late", 1000, 1000, w.cancel, &other));
  CHECK_OK(fencing_scope_status(store, "free", &info));
  CHECK_U64(info.counter, 0);
  fencing_cancel_fire(NULL);
  fencing_cancel_free(w.cancel);
  fencing_cancel_free(NULL);
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/fencing-c-threads-XXXXXX";
  char url[128], path[160];
  pthread_t threads[THREADS];
  worker workers[THREADS];
  bool sqlite;

  if (argc != 2 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "sqlite") != 0)) {
    fprintf(stderr, "usage: %s memory|sqlite\n", argv[0]);
    return 2;
  }
  sqlite = strcmp(argv[1], "sqlite") == 0;
  rounds = sqlite ? 25 : 300;
  REQUIRE(mkdtemp(dir) != NULL);
  if (sqlite) {
    snprintf(url, sizeof url, "sqlite:%s/threads.db", dir);
  } else {
    snprintf(url, sizeof url, "memory:");
  }
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);

  for (int i = 0; i < THREADS; i++) {
    worker *w = &workers[i];
    memset(w, 0, sizeof *w);
    w->id = i;
    snprintf(w->holder, sizeof w->holder, "t%d", i);
    snprintf(w->key, sizeof w->key, "k%d", i);
    w->tokens = calloc((size_t)rounds, sizeof *w->tokens);
    REQUIRE(w->tokens != NULL);
    REQUIRE(pthread_create(&threads[i], NULL, run, w) == 0);
  }
  for (int i = 0; i < THREADS; i++) {
    REQUIRE(pthread_join(threads[i], NULL) == 0);
  }

  CHECK_U64(atomic_load(&bad_calls), 0);
  CHECK_U64(atomic_load(&bad_details), 0);
  CHECK_U64(atomic_load(&overlaps), 0);

  /* Tokens: increasing per thread, unique overall, exactly 1..N. */
  size_t total = (size_t)THREADS * (size_t)rounds;
  uint64_t *all = calloc(total, sizeof *all);
  int accepted = 0, stale = 0, acquired = 0, conflicts = 0;
  uint64_t max_accepted = 0;
  REQUIRE(all != NULL);
  for (int i = 0; i < THREADS; i++) {
    worker *w = &workers[i];
    for (int j = 0; j < rounds; j++) {
      all[(size_t)i * (size_t)rounds + (size_t)j] = w->tokens[j];
      if (j > 0 && !CHECK(w->tokens[j] > w->tokens[j - 1])) {
        break;
      }
    }
    accepted += w->accepted;
    stale += w->stale;
    acquired += w->acquired;
    conflicts += w->conflicts;
    if (w->last_accepted > max_accepted) {
      max_accepted = w->last_accepted;
    }
    CHECK_U64((uint64_t)(w->accepted + w->stale), (uint64_t)rounds);
  }
  qsort(all, total, sizeof *all, by_value);
  bool exact = true;
  for (size_t i = 0; i < total; i++) {
    exact = exact && all[i] == i + 1;
  }
  CHECK(exact);
  free(all);

  /* The store accounts for every call. */
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(store, "race", &info));
  CHECK_U64(info.counter, total);
  CHECK_U64(info.fence, max_accepted);
  CHECK_U64(info.entries, THREADS);
  for (int i = 0; i < THREADS; i++) {
    fencing_entry *e = NULL;
    CHECK_OK(fencing_get(store, "race", workers[i].key, NULL, &e));
    if (workers[i].accepted == 0) {
      CHECK(e == NULL);
    } else if (CHECK(e != NULL)) {
      CHECK_U64(fencing_entry_token(e), workers[i].last_accepted);
      CHECK_U64(fencing_entry_version(e), (uint64_t)workers[i].accepted);
    }
    fencing_entry_free(e);
  }
  CHECK_OK(fencing_scope_status(store, "lease", &info));
  CHECK_U64(info.counter, (uint64_t)acquired);
  CHECK(!info.has_lease);
  fencing_metrics m;
  CHECK_OK(fencing_metrics_snapshot(store, &m));
  CHECK_U64(m.tokens_issued, total + (uint64_t)acquired);
  CHECK_U64(m.leases_acquired, (uint64_t)acquired);
  CHECK_U64(m.acquire_conflicts, (uint64_t)conflicts);
  CHECK_U64(m.releases, (uint64_t)acquired);
  CHECK_U64(m.writes_accepted, (uint64_t)(accepted + acquired));
  CHECK_U64(m.stale_rejections, (uint64_t)stale);
  CHECK(accepted >= 1 && acquired >= 1);
  printf("%d writes accepted, %d stale, %d leases, %d conflicts\n", accepted, stale, acquired,
         conflicts);
  cancelled_wait();

  fencing_store_free(store);
  for (int i = 0; i < THREADS; i++) {
    free(workers[i].tokens);
  }
  if (sqlite) {
    static const char *names[] = {"threads.db", "threads.db-wal", "threads.db-shm", ".threads.db-fencing"};
    for (size_t i = 0; i < 4; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, names[i]);
      unlink(path);
    }
  }
  rmdir(dir);
  printf("threads on %s: ", argv[1]);
  return check_summary();
}
