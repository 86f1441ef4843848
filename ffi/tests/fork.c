/* A store opened before fork() (docs/semantics.md, "Fork"): a C server that
 * opens its store and then forks workers. Each child uses the handle it
 * inherited (100 tokens, writes and checked reads) and gets connections of
 * its own; the parent works meanwhile and after its children are gone; every
 * token is handed out once.
 *
 *   fork sqlite      a fresh SQLite file in a temp dir
 *   fork postgres    a fresh schema on FENCING_TEST_PG_URL (skipped, exit 0,
 *                    without it; failed when FENCING_REQUIRE_PG=1) */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

enum { CHILDREN = 4, ROUNDS = 100 };

/* 100 rounds: a token from the shared counter logged under its own key (a
 * token handed out twice lands on one key twice), then a fenced write and a
 * checked read in the worker's own scope. Returns the failed checks. */
static int work(const fencing_store *store, const char *who) {
  int failed_before = checks_failed;
  fencing_fence one = {.token = 1};
  char mine[64], key[32], value[64];
  snprintf(mine, sizeof mine, "own-%s", who);
  for (int i = 0; i < ROUNDS; i++) {
    uint64_t token = 0, own = 0;
    fencing_receipt r;
    CHECK_OK(fencing_next_token(store, "shared", &token));
    snprintf(key, sizeof key, "%" PRIu64, token);
    CHECK_OK(fencing_put(store, "log", key, (const uint8_t *)who, strlen(who), &one, &r));
    CHECK_OK(fencing_next_token(store, mine, &own));
    fencing_fence fence = {.token = own};
    int n = snprintf(value, sizeof value, "%s-%d", who, i);
    CHECK_OK(fencing_put(store, mine, "k", (const uint8_t *)value, (size_t)n, &fence, &r));
    fencing_entry *entry = NULL;
    CHECK_OK(fencing_get(store, mine, "k", &fence, &entry));
    CHECK(entry != NULL && fencing_entry_value_len(entry) == (size_t)n &&
          memcmp(fencing_entry_value(entry), value, (size_t)n) == 0);
    fencing_entry_free(entry);
  }
  return checks_failed - failed_before;
}

static size_t logged(const fencing_store *store) {
  size_t count = 0;
  char after[32] = "";
  for (;;) {
    fencing_page *page = NULL;
    if (!CHECK_OK(fencing_list(store, "log", after[0] ? after : NULL, 1000, &page))) {
      return 0;
    }
    count += fencing_page_len(page);
    const char *next = fencing_page_next(page);
    bool more = next != NULL;
    if (more) {
      snprintf(after, sizeof after, "%s", next);
    }
    fencing_page_free(page);
    if (!more) {
      return count;
    }
  }
}

int main(int argc, char **argv) {
  const char *backend = argc > 1 ? argv[1] : "sqlite";
  char url[4096], dir[] = "/tmp/fencing-fork.XXXXXX";
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
    snprintf(url, sizeof url, "%s?schema=t_c_fork_%ld_%ld&pool_size=2", base, (long)getpid(),
             (long)time(NULL));
  } else {
    REQUIRE(mkdtemp(dir) != NULL);
    made_dir = true;
    snprintf(url, sizeof url, "sqlite:%s/fork.db", dir);
  }

  fencing_store *store = NULL;
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);
  uint64_t first = 0;
  CHECK_OK(fencing_next_token(store, "shared", &first)); /* connected before the fork */

  pid_t children[CHILDREN];
  for (int c = 0; c < CHILDREN; c++) {
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      char who[16];
      snprintf(who, sizeof who, "child%d", c);
      _exit(work(store, who) == 0 ? 0 : 1);
    }
    children[c] = pid;
  }
  work(store, "parent");
  for (int c = 0; c < CHILDREN; c++) {
    int status = 0;
    CHECK(waitpid(children[c], &status, 0) == children[c]);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  work(store, "parent-after");
  CHECK_U64(logged(store), (CHILDREN + 2) * ROUNDS);
  fencing_store_free(store);
  if (made_dir) {
    char path[4200];
    snprintf(path, sizeof path, "%s/fork.db", dir);
    remove_store(path);
    rmdir(dir);
  }
  return check_summary();
}
