/* The store's own record (docs/operations.md) through the C ABI: a
 * snapshot of recent rejections and last writers, read from a second
 * handle, with bad arguments refused. Usage: events memory|sqlite */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char SECRET[] = "SECRET-VALUE";

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "sqlite") != 0)) {
    fprintf(stderr, "usage: %s memory|sqlite\n", argv[0]);
    return 2;
  }
  int sqlite = strcmp(argv[1], "sqlite") == 0;
  char path[64] = "";
  char url[128] = "memory:";
  if (sqlite) {
    strcpy(path, "/tmp/fencing-c-events-XXXXXX");
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    close(fd);
    /* A new store: the name may be one an earlier run used (mkstemp's names
     * repeat with the pid), whose sidecar would make this file a restored
     * store, which steps its counters (docs/sqlite.md). */
    remove_store(path);
    snprintf(url, sizeof url, "sqlite:%s", path);
  }
  fencing_store *writer = NULL, *operator_ = NULL;
  REQUIRE(fencing_store_open(url, &writer) == FENCING_OK);
  /* memory: is one process's store: the same handle reads it. */
  if (sqlite) {
    REQUIRE(fencing_store_open(url, &operator_) == FENCING_OK);
  } else {
    operator_ = writer;
  }

  fencing_fence b = {.token = 2, .holder = "worker-b"};
  fencing_fence a = {.token = 1, .holder = "worker-a"};
  fencing_receipt receipt;
  CHECK_OK(fencing_put(writer, "r:7", "report", (const uint8_t *)"B", 1, &b, &receipt));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(writer, "r:7", "report", (const uint8_t *)SECRET,
                                                strlen(SECRET), &a, &receipt));

  fencing_events *ev = NULL;
  CHECK_OK(fencing_events_snapshot(operator_, NULL, 20, &ev));
  REQUIRE(ev != NULL);
  CHECK_U64(fencing_events_rejection_count(ev), 1);
  fencing_recorded_rejection r;
  CHECK_OK(fencing_events_rejection(ev, 0, &r));
  CHECK(r.code == FENCING_STALE_TOKEN);
  CHECK_STR(r.scope, "r:7");
  CHECK_STR(r.key, "report");
  CHECK_STR(r.holder, "worker-a");
  CHECK_U64(r.presented, 1);
  CHECK_U64(r.current, 2);
  CHECK(!r.has_seq);
  CHECK_U64(r.suppressed, 0);
  CHECK_U64(r.id, 1);
  CHECK(r.at_ms > 1600000000000ull);
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_events_rejection(ev, 1, &r));
  CHECK_U64(fencing_events_last_write_count(ev), 1);
  fencing_last_write w;
  CHECK_OK(fencing_events_last_write(ev, 0, &w));
  CHECK_STR(w.scope, "r:7");
  CHECK_STR(w.holder, "worker-b");
  CHECK_U64(w.token, 2);
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_events_last_write(ev, 1, &w));
  fencing_events_free(ev);

  /* One scope's record; another scope has none. */
  ev = NULL;
  CHECK_OK(fencing_events_snapshot(operator_, "other", 1, &ev));
  CHECK_U64(fencing_events_rejection_count(ev), 0);
  CHECK_U64(fencing_events_last_write_count(ev), 0);
  fencing_events_free(ev);

  /* Bad arguments: a clear status, and *out untouched. */
  fencing_events *untouched = (fencing_events *)&untouched;
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_events_snapshot(operator_, NULL, 0, &untouched));
  CHECK(strstr(last_message(), "1..=256") != NULL);
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_events_snapshot(operator_, NULL, 257, &untouched));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_events_snapshot(operator_, "", 5, &untouched));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_events_snapshot(operator_, "\xff", 5, &untouched));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_events_snapshot(NULL, NULL, 5, &untouched));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_events_snapshot(operator_, NULL, 5, NULL));
  CHECK(untouched == (fencing_events *)&untouched);
  CHECK_U64(fencing_events_rejection_count(NULL), 0);
  CHECK_U64(fencing_events_last_write_count(NULL), 0);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_events_rejection(NULL, 0, &r));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_events_last_write(NULL, 0, &w));
  fencing_events_free(NULL);

  /* Live: the rejections recorded after the watch began, from another
   * handle too (one row per scope and second: a new scope). */
  fencing_rejection_watch *watch = NULL;
  CHECK_OK(fencing_rejection_watch_open(operator_, NULL, &watch));
  REQUIRE(watch != NULL);
  ev = (fencing_events *)&ev;
  CHECK_OK(fencing_rejection_watch_next(watch, 0, &ev));
  CHECK(ev == NULL); /* r:7's rejection came before the watch */
  CHECK_OK(fencing_put(writer, "r:8", "report", (const uint8_t *)"B", 1, &b, &receipt));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(writer, "r:8", "report", (const uint8_t *)"A", 1, &a, &receipt));
  CHECK_OK(fencing_rejection_watch_next(watch, 60000, &ev)); /* a hang, not a speed claim */
  REQUIRE(ev != NULL);
  CHECK_U64(fencing_events_rejection_count(ev), 1);
  CHECK_OK(fencing_events_rejection(ev, 0, &r));
  CHECK_STR(r.scope, "r:8");
  CHECK_STR(r.holder, "worker-a");
  CHECK_U64(r.presented, 1);
  CHECK_U64(r.current, 2);
  fencing_events_free(ev);
  /* A fired cancel ends the wait at once, with nothing. */
  fencing_cancel *cancel = fencing_cancel_new();
  fencing_cancel_fire(cancel);
  ev = (fencing_events *)&ev;
  CHECK_OK(fencing_rejection_watch_next_cancellable(watch, 60000, cancel, &ev));
  CHECK(ev == NULL);
  untouched = (fencing_events *)&untouched;
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_rejection_watch_next_cancellable(watch, 0, NULL, &untouched));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_rejection_watch_next(NULL, 0, &untouched));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_rejection_watch_next(watch, 0, NULL));
  CHECK(untouched == (fencing_events *)&untouched);
  fencing_rejection_watch *bad = (fencing_rejection_watch *)&bad;
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_rejection_watch_open(operator_, "", &bad));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_rejection_watch_open(operator_, "\xff", &bad));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_rejection_watch_open(NULL, "r:8", &bad));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_rejection_watch_open(operator_, "r:8", NULL));
  CHECK(bad == (fencing_rejection_watch *)&bad);
  fencing_rejection_watch_free(NULL);
  fencing_cancel_free(cancel);
  /* The store closed under the watch: CLOSED, not a silent end. */
  CHECK_OK(fencing_store_close(operator_));
  CHECK_STATUS(FENCING_CLOSED, fencing_rejection_watch_next(watch, 1000, &untouched));
  fencing_rejection_watch_free(watch);

  if (sqlite) {
    fencing_store_free(operator_);
  }
  fencing_store_free(writer);
  if (sqlite) {
    remove_store(path);
  }
  printf("events on %s: ", argv[1]);
  return check_summary();
}
