/* fencing_set_log_callback: the library's log records reach a C function,
 * at the level asked for, never with a value; NULL turns them off; the
 * callback cannot replace itself. Usage: log */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "check.h"

static const char SECRET[] = "SECRET-VALUE";

struct seen {
  pthread_mutex_t lock;
  int records;
  int warnings;
  int at_info_or_above;
  uint32_t last_level;
  char last[1024];
  fencing_status from_inside;
};

static void on_log(uint32_t level, const char *message, void *user_data) {
  struct seen *seen = user_data;
  pthread_mutex_lock(&seen->lock);
  seen->records++;
  if (level == FENCING_LOG_WARN) {
    seen->warnings++;
  }
  if (level <= FENCING_LOG_INFO) {
    seen->at_info_or_above++;
  }
  seen->last_level = level;
  snprintf(seen->last, sizeof seen->last, "%s", message);
  pthread_mutex_unlock(&seen->lock);
}

static void replaces_itself(uint32_t level, const char *message, void *user_data) {
  (void)level;
  (void)message;
  struct seen *seen = user_data;
  seen->from_inside = fencing_set_log_callback(on_log, FENCING_LOG_TRACE, seen);
}

static void reset(struct seen *seen) {
  seen->records = seen->warnings = seen->at_info_or_above = 0;
  seen->last_level = 0;
  seen->last[0] = '\0';
}

int main(void) {
  struct seen seen = {.lock = PTHREAD_MUTEX_INITIALIZER};
  fencing_store *store = NULL;
  REQUIRE(fencing_store_open("memory:", &store) == FENCING_OK);
  fencing_lease old, new_;
  fencing_receipt receipt;

  /* WARN and above: normal operation is silent. */
  CHECK_OK(fencing_set_log_callback(on_log, FENCING_LOG_INFO, &seen));
  CHECK_OK(fencing_acquire(store, "c-log", "worker-a", 30000, &old));
  fencing_fence a = {.token = old.token, .holder = "worker-a"};
  CHECK_OK(fencing_put(store, "c-log", "k", (const uint8_t *)"A", 1, &a, &receipt));
  bool released = false;
  CHECK_OK(fencing_release(store, "c-log", old.token, &released));
  CHECK(released);
  CHECK_U64((uint64_t)seen.records, 0);

  /* A stale put: one WARN naming the scope and both tokens, not the value. */
  CHECK_OK(fencing_acquire(store, "c-log", "worker-b", 30000, &new_));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(store, "c-log", "k", (const uint8_t *)SECRET,
                                                strlen(SECRET), &a, &receipt));
  CHECK_U64((uint64_t)seen.records, 1);
  CHECK_U64((uint64_t)seen.warnings, 1);
  CHECK_U64(seen.last_level, FENCING_LOG_WARN);
  CHECK(strstr(seen.last, "scope=\"c-log\"") != NULL);
  CHECK(strstr(seen.last, "STALE_TOKEN") != NULL);
  char tokens[64];
  snprintf(tokens, sizeof tokens, "presented=%" PRIu64 " current=%" PRIu64, old.token, new_.token);
  CHECK(strstr(seen.last, tokens) != NULL);
  CHECK(strstr(seen.last, SECRET) == NULL);
  if (checks_failed) {
    fprintf(stderr, "last record: %s\n", seen.last);
  }

  /* DEBUG: normal operation shows. */
  reset(&seen);
  CHECK_OK(fencing_set_log_callback(on_log, FENCING_LOG_DEBUG, &seen));
  CHECK_OK(fencing_release(store, "c-log", new_.token, &released));
  CHECK_U64((uint64_t)seen.records, 1);
  CHECK_U64(seen.last_level, FENCING_LOG_DEBUG);
  CHECK_U64((uint64_t)seen.at_info_or_above, 0);

  /* NULL: off. */
  reset(&seen);
  CHECK_OK(fencing_set_log_callback(NULL, FENCING_LOG_TRACE, &seen));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(store, "c-log", "k", (const uint8_t *)SECRET,
                                                strlen(SECRET), &a, &receipt));
  CHECK_U64((uint64_t)seen.records, 0);

  /* From inside the callback: refused, and the callback stays. (DEBUG: a
     rejection of the same scope within a second of a warning is logged at
     DEBUG.) */
  CHECK_OK(fencing_set_log_callback(replaces_itself, FENCING_LOG_DEBUG, &seen));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(store, "c-log", "k", (const uint8_t *)SECRET,
                                                strlen(SECRET), &a, &receipt));
  CHECK(seen.from_inside == FENCING_INVALID_ARGUMENT);
  CHECK_OK(fencing_set_log_callback(NULL, 0, NULL));

  fencing_store_free(store);
  printf("log: ");
  return check_summary();
}
