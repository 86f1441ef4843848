/* Resident memory stays bounded over many open/close cycles and many
 * operations (docs/testing.md, "Leak tests"): RSS after the first tenth
 * (the warm-up) against RSS at the end. Memory only, no timing. Not run
 * under valgrind or the sanitizers, which own the process's memory.
 *
 *   leak memory      10,000 open/free cycles, 100,000 operations
 *   leak sqlite      2,000 cycles (each opens the file and checks its schema
 *                    in a write transaction), 100,000 operations
 *   leak postgres    200 cycles (each a server connection), 5,000 operations
 *                    (each a round trip); a fresh schema on
 *                    FENCING_TEST_PG_URL (skipped without it, failed when
 *                    FENCING_REQUIRE_PG=1) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* A leak of 1 KiB per memory: store or 100 bytes per operation exceeds it. */
#define BOUND (8u << 20)

static char url[1024];

static uint64_t rss(void) {
  unsigned long size = 0, resident = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f == NULL) return 0;
  if (fscanf(f, "%lu %lu", &size, &resident) != 2) resident = 0;
  fclose(f);
  return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static void bounded(const char *what, uint64_t before, uint64_t after) {
  printf("%s: RSS %.1f -> %.1f MiB\n", what, before / 1048576.0, after / 1048576.0);
  CHECK(before > 0 && after <= before + BOUND);
}

static void open_close(const char *what, int n) {
  uint64_t before = 0, fence = 0;
  for (int i = 0; i < n; i++) {
    if (i == n / 10) before = rss();
    fencing_store *s = NULL;
    if (!CHECK_OK(fencing_store_open(url, &s))) return;
    CHECK_OK(fencing_fence_of(s, "s", &fence));
    CHECK_OK(fencing_store_close(s));
    fencing_store_free(s);
  }
  bounded(what, before, rss());
}

static void operations(const char *what, int n) {
  fencing_store *s = NULL;
  if (!CHECK_OK(fencing_store_open(url, &s))) return;
  uint64_t stale_token = 0, before = 0, fence_now = 0;
  fencing_lease lease;
  CHECK_OK(fencing_next_token(s, "leak", &stale_token)); /* the lease leaves it behind */
  CHECK_OK(fencing_acquire(s, "leak", "h", 3600000, &lease));
  fencing_fence fence = {.token = lease.token}, stale = {.token = stale_token};
  const uint8_t *v = (const uint8_t *)"value";
  char key[16];
  for (int i = 0; i < n; i++) {
    if (i == n / 10) before = rss();
    snprintf(key, sizeof key, "k%d", i % 100);
    fencing_entry *entry = NULL;
    switch (i % 4) {
    case 0: CHECK_OK(fencing_put(s, "leak", key, v, 5, &fence, NULL)); break;
    case 1:
      CHECK_OK(fencing_get(s, "leak", key, NULL, &entry));
      fencing_entry_free(entry);
      break;
    case 2: CHECK_OK(fencing_fence_of(s, "leak", &fence_now)); break;
    default: CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "leak", "k", v, 5, &stale, NULL));
    }
  }
  bounded(what, before, rss());
  fencing_store_free(s);
}

int main(int argc, char **argv) {
  const char *backend = argc == 2 ? argv[1] : "";
  char file[512];
  if (strcmp(backend, "memory") == 0) {
    snprintf(url, sizeof url, "memory:");
    open_close("memory: open/close", 10000);
    operations("memory: operations", 100000);
  } else if (strcmp(backend, "sqlite") == 0) {
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(file, sizeof file, "%s/fencing-c-leak-%ld.db", dir, (long)getpid());
    /* A store left at this name by an earlier run with the same pid: its
     * sidecar would make this new store take the failover step. */
    remove_store(file);
    snprintf(url, sizeof url, "sqlite:%s?synchronous=normal", file);
    open_close("sqlite: open/close", 2000);
    operations("sqlite: operations", 100000);
    remove_store(file);
  } else if (strcmp(backend, "postgres") == 0) {
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
    snprintf(url, sizeof url, "%s?schema=t_c_leak_%ld_%ld", base, (long)getpid(), (long)time(NULL));
    open_close("postgres: open/close", 200);
    operations("postgres: operations", 5000);
  } else {
    fprintf(stderr, "usage: %s memory|sqlite|postgres\n", argv[0]);
    return 2;
  }
  return check_summary();
}
