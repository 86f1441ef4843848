/* Fencing your own SQLite tables with plain SQL (docs/sqlite.md), through the
 * sqlite3 library itself, not through fencing: the file is created by opening
 * a fencing store once, the user's own table sits beside fencing's, and every
 * check is `INSERT INTO fencing_check` in the user's own BEGIN IMMEDIATE
 * transaction. fencing_error_from_sqlite turns sqlite3_errmsg() into the
 * status.
 *
 * The paused-worker story and a race run in fork()ed processes; alarm()
 * bounds the whole run, and children die with the parent.
 *
 * Which sqlite3 this test's own calls reach depends on the link: with
 * libfencing.so they are Debian's libsqlite3 (older than the core's), with
 * libfencing.a the copy bundled in the archive wins (its sqlite3_* symbols
 * are not hidden there); the first line printed says which. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

#define SCOPE "report:7"
#define LIMIT_S 120

static char path[512];
static char url[600];

static sqlite3 *user_open(void) {
  sqlite3 *db = NULL;
  REQUIRE(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
  sqlite3_busy_timeout(db, 10000);
  return db;
}

static void exec_ok(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (!CHECK(sqlite3_exec(db, sql, NULL, NULL, &err) == SQLITE_OK)) {
    fprintf(stderr, "  %s: %s\n", sql, err ? err : "?");
  }
  sqlite3_free(err);
}

static void cleanup(void);

/* The test's store file and its URL; a store at that path is removed first,
 * sidecar included (docs/sqlite.md, "The file is the store"): a sidecar left
 * by an earlier run with the same pid would make the new store take the
 * failover step, as a store made anew where another was deleted does. */
static void fresh_files(const char *tag) {
  const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(path, sizeof path, "%s/fencing-sqlite-check-%ld-%s.db", dir, (long)getpid(), tag);
  snprintf(url, sizeof url, "sqlite:%s", path);
  cleanup();
}

/* A fresh store file with the user's own table beside fencing's. */
static void setup(const char *tag) {
  fresh_files(tag);
  fencing_store *store = NULL;
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);
  fencing_store_free(store);
  sqlite3 *db = user_open();
  exec_ok(db, "CREATE TABLE report_state (id INTEGER PRIMARY KEY, body TEXT NOT NULL,"
              " token INTEGER NOT NULL, history TEXT NOT NULL DEFAULT '');"
              "INSERT INTO report_state (id, body, token) VALUES (7, 'original', 0)");
  sqlite3_close(db);
}

static void cleanup(void) {
  remove_store(path);
}

/* Steps one prepared insert into fencing_check: FENCING_OK when it passed,
 * else what fencing_error_from_sqlite makes of the error (FENCING_BACKEND
 * with a note when it is not a fencing_check rejection). */
static fencing_status step_check(sqlite3 *db, sqlite3_stmt *st) {
  int rc = sqlite3_step(st);
  fencing_status status = FENCING_OK;
  if (rc != SQLITE_DONE) {
    status = fencing_error_from_sqlite(sqlite3_errmsg(db));
    if (status == FENCING_OK) {
      fprintf(stderr, "  not a fencing_check rejection: %s\n", sqlite3_errmsg(db));
      status = FENCING_BACKEND;
    }
  }
  sqlite3_finalize(st);
  return status;
}

static fencing_status check(sqlite3 *db, const char *scope, int64_t token, int64_t seq) {
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO fencing_check (scope, token, seq) VALUES (?, ?, ?)",
                             -1, &st, NULL) == SQLITE_OK);
  sqlite3_bind_text(st, 1, scope, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, token);
  if (seq >= 0) {
    sqlite3_bind_int64(st, 3, seq);
  }
  return step_check(db, st);
}

/* The check and the user's UPDATE in one BEGIN IMMEDIATE transaction; the
 * UPDATE first, the order a careless caller would use, so that only the
 * rollback keeps a stale write out. */
static fencing_status fenced_update(sqlite3 *db, uint64_t token, const char *body) {
  sqlite3_stmt *st = NULL;
  exec_ok(db, "BEGIN IMMEDIATE");
  REQUIRE(sqlite3_prepare_v2(db,
                             "UPDATE report_state SET body = ?1, token = ?2,"
                             " history = history || ',' || ?2 WHERE id = 7",
                             -1, &st, NULL) == SQLITE_OK);
  sqlite3_bind_text(st, 1, body, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, (sqlite3_int64)token);
  CHECK(sqlite3_step(st) == SQLITE_DONE);
  sqlite3_finalize(st);
  fencing_status status = check(db, SCOPE, (int64_t)token, -1);
  exec_ok(db, status == FENCING_OK ? "COMMIT" : "ROLLBACK");
  return status;
}

static void row(char *body, size_t len, int64_t *token) {
  sqlite3 *db = user_open();
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT body, token FROM report_state WHERE id = 7", -1, &st,
                             NULL) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  snprintf(body, len, "%s", (const char *)sqlite3_column_text(st, 0));
  *token = sqlite3_column_int64(st, 1);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

static bool read_full(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t got = read(fd, p, n);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      return false;
    }
    p += got;
    n -= (size_t)got;
  }
  return true;
}

static void write_full(int fd, const void *buf, size_t n) {
  if (write(fd, buf, n) != (ssize_t)n) {
    _exit(4);
  }
}

/* ----- fencing_error_from_sqlite: no database needed ----- */

static void test_mapping(void) {
  static const struct {
    const char *message;
    fencing_status status;
  } raised[] = {
      {"STALE_TOKEN: a newer holder has taken over, stop", FENCING_STALE_TOKEN},
      {"SEQUENCE_OUT_OF_ORDER: seq is not after", FENCING_SEQUENCE_OUT_OF_ORDER},
      {"INVALID_ARGUMENT: token must be an integer", FENCING_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof raised / sizeof raised[0]; i++) {
    CHECK_STATUS(raised[i].status, fencing_error_from_sqlite(raised[i].message));
    fencing_error e;
    CHECK_OK(fencing_last_error(&e));
    CHECK(e.status == raised[i].status);
  }
  /* Not fencing's: FENCING_OK, the last error stays. */
  const char *others[] = {"UNIQUE constraint failed: t.id", "database is locked",
                          "LEASE_HELD: not raised by the view", "STALE_TOKEN", ""};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    CHECK_OK(fencing_error_from_sqlite(others[i]));
    fencing_error e;
    CHECK_OK(fencing_last_error(&e));
    CHECK(e.status == FENCING_INVALID_ARGUMENT);
  }
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_error_from_sqlite(NULL));
  CHECK(strstr(last_message(), "message") != NULL);
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_error_from_sqlite("STALE_TOKEN: \xff"));
}

/* ----- the paused-worker story, in real processes ----- */

static void test_paused_worker(void) {
  setup("story");
  int to_parent[2], to_child[2];
  REQUIRE(pipe(to_parent) == 0 && pipe(to_child) == 0);
  pid_t a = fork();
  REQUIRE(a >= 0);
  if (a == 0) {
    /* Worker A: takes the lease, says so, "pauses" until told to go on (its
     * lease expires meanwhile), then writes with its old token. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    fencing_store *store = NULL;
    fencing_lease lease;
    if (fencing_store_open(url, &store) != FENCING_OK ||
        fencing_acquire(store, SCOPE, "worker-a", 200, &lease) != FENCING_OK) {
      _exit(5);
    }
    write_full(to_parent[1], &lease.token, sizeof lease.token);
    char go;
    if (!read_full(to_child[0], &go, 1)) {
      _exit(6);
    }
    sqlite3 *db = user_open();
    fencing_status outcome = fenced_update(db, lease.token, "by A (stale)");
    sqlite3_close(db);
    write_full(to_parent[1], &outcome, sizeof outcome);
    fencing_store_free(store);
    _exit(0);
  }
  uint64_t a_token = 0;
  REQUIRE(read_full(to_parent[0], &a_token, sizeof a_token));
  /* B waits until A's lease has expired, then takes over and writes. */
  fencing_store *store = NULL;
  fencing_lease b;
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);
  REQUIRE(fencing_acquire_wait(store, SCOPE, "worker-b", 10000, 10000, &b) == FENCING_OK);
  CHECK(b.token > a_token);
  sqlite3 *db = user_open();
  CHECK_OK(fenced_update(db, b.token, "by B"));
  sqlite3_close(db);
  /* A wakes up and writes with its old token: its whole transaction rolls back. */
  write_full(to_child[1], "g", 1);
  fencing_status outcome = FENCING_OK;
  CHECK(read_full(to_parent[0], &outcome, sizeof outcome));
  CHECK(outcome == FENCING_STALE_TOKEN);
  int wstatus = 0;
  CHECK(waitpid(a, &wstatus, 0) == a && WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
  char body[64];
  int64_t token = 0;
  row(body, sizeof body, &token);
  CHECK_STR(body, "by B");
  CHECK_U64((uint64_t)token, b.token);
  /* One state: the library sees the fence the check raised. */
  uint64_t fence = 0;
  CHECK_OK(fencing_fence_of(store, SCOPE, &fence));
  CHECK_U64(fence, b.token);
  fencing_store_free(store);
  close(to_parent[0]);
  close(to_parent[1]);
  close(to_child[0]);
  close(to_child[1]);
  cleanup();
}

/* ----- the rules ----- */

static void test_rules(void) {
  setup("rules");
  fencing_store *store = NULL;
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);
  sqlite3 *db = user_open();
  uint64_t fence = 0;
  /* A fresh scope accepts any token and raises its fence; equal passes. */
  CHECK_OK(check(db, "s", 40, -1));
  CHECK_OK(fencing_fence_of(store, "s", &fence));
  CHECK_U64(fence, 40);
  CHECK_OK(check(db, "s", 40, -1));
  CHECK_STATUS(FENCING_STALE_TOKEN, check(db, "s", 39, -1));
  /* Seq: after the last accepted seq of the same token only. */
  CHECK_OK(check(db, "s", 41, 5));
  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER, check(db, "s", 41, 5));
  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER, check(db, "s", 41, 4));
  CHECK_OK(check(db, "s", 41, 6));
  CHECK_OK(check(db, "s", 42, 0));
  /* The library's fences hold for the check, and the other way round. */
  fencing_fence fifty = {.token = 50}, sixty = {.token = 60};
  fencing_receipt r;
  CHECK_OK(fencing_put(store, "s", "k", (const uint8_t *)"v", 1, &fifty, &r));
  CHECK_STATUS(FENCING_STALE_TOKEN, check(db, "s", 49, -1));
  CHECK_OK(check(db, "s", 60, -1));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(store, "s", "k", (const uint8_t *)"v", 1, &fifty, &r));
  /* A retired scope's floor: tokens of its old life never pass, the floor
   * itself included; the next one does. */
  CHECK_OK(fencing_delete(store, "s", "k", &sixty, &r));
  bool retired = false;
  CHECK_OK(fencing_retire(store, "s", &retired));
  CHECK(retired);
  CHECK_STATUS(FENCING_STALE_TOKEN, check(db, "s", 60, -1));
  CHECK_STATUS(FENCING_STALE_TOKEN, check(db, "s", 1, -1));
  CHECK_OK(check(db, "s", 61, -1));
  sqlite3_close(db);
  fencing_store_free(store);
  cleanup();
}

/* ----- bad input ----- */

enum kind { INT, REAL, TEXT, BLOB, NUL };
struct arg {
  enum kind kind;
  int64_t i;
  double d;
  const char *t;
};

static void bind(sqlite3_stmt *st, int at, struct arg a) {
  switch (a.kind) {
  case INT:
    sqlite3_bind_int64(st, at, a.i);
    break;
  case REAL:
    sqlite3_bind_double(st, at, a.d);
    break;
  case TEXT:
    sqlite3_bind_text(st, at, a.t, (int)a.i, SQLITE_TRANSIENT);
    break;
  case BLOB:
    sqlite3_bind_blob(st, at, a.t, (int)a.i, SQLITE_TRANSIENT);
    break;
  case NUL:
    sqlite3_bind_null(st, at);
    break;
  }
}

static void test_bad_input(void) {
  setup("bad");
  sqlite3 *db = user_open();
  static char long_scope[258];
  memset(long_scope, 'x', 257);
  const struct arg s = {TEXT, -1, 0, "s"}, one = {INT, 1, 0, NULL}, none = {NUL, 0, 0, NULL};
  const struct {
    const char *what;
    struct arg scope, token, seq;
  } cases[] = {
      {"token 0", s, {INT, 0, 0, NULL}, none},
      {"token -1", s, {INT, -1, 0, NULL}, none},
      {"token 2^63 as a real", s, {REAL, 0, 9223372036854775808.0, NULL}, none},
      {"token 2^63 as text", s, {TEXT, -1, 0, "9223372036854775808"}, none},
      {"token as text", s, {TEXT, -1, 0, "42"}, none},
      {"token NULL", s, none, none},
      {"token as blob", s, {BLOB, 1, 0, "\x01"}, none},
      {"seq -1", s, one, {INT, -1, 0, NULL}},
      {"seq as text", s, one, {TEXT, -1, 0, "1"}},
      {"scope NULL", none, one, none},
      {"scope empty", {TEXT, 0, 0, ""}, one, none},
      {"scope 257 bytes", {TEXT, -1, 0, long_scope}, one, none},
      {"scope with NUL", {TEXT, 3, 0, "a\0b"}, one, none},
      {"scope as integer", {INT, 7, 0, NULL}, one, none},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sqlite3_stmt *st = NULL;
    REQUIRE(sqlite3_prepare_v2(db, "INSERT INTO fencing_check (scope, token, seq) VALUES (?, ?, ?)",
                               -1, &st, NULL) == SQLITE_OK);
    bind(st, 1, cases[i].scope);
    bind(st, 2, cases[i].token);
    bind(st, 3, cases[i].seq);
    if (!CHECK_STATUS(FENCING_INVALID_ARGUMENT, step_check(db, st))) {
      fprintf(stderr, "  case: %s\n", cases[i].what);
    }
  }
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM fencing_scopes", -1, &st, NULL) == SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  CHECK(sqlite3_column_int64(st, 0) == 0); /* a rejected check created no scope */
  sqlite3_finalize(st);
  sqlite3_close(db);
  cleanup();
}

/* ----- a race of processes ----- */

#define RACERS 3

/* One outcome, as a racer sends it: no padding, so every byte written is set. */
struct report {
  uint64_t token;
  uint64_t status; /* a fencing_status */
};

/* A racing worker: loops lease, then a fenced update of the shared row,
 * sometimes "pausing" past its TTL first; reports each outcome. */
static void racer(int id, int out) {
  fencing_store *store = NULL;
  if (fencing_store_open(url, &store) != FENCING_OK) {
    _exit(5);
  }
  sqlite3 *db = user_open();
  char holder[16];
  snprintf(holder, sizeof holder, "race%d", id);
  unsigned seed = (unsigned)id * 2654435761u;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    fencing_lease lease;
    if (fencing_acquire_wait(store, SCOPE, holder, 50, 2000, &lease) != FENCING_OK) {
      continue;
    }
    seed = seed * 1103515245u + 12345u;
    if ((seed >> 16) % 3 == 0) {
      usleep(100 * 1000); /* paused past the lease */
    }
    struct report report = {lease.token, (uint64_t)fenced_update(db, lease.token, holder)};
    write_full(out, &report, sizeof report);
    bool released;
    fencing_release(store, SCOPE, lease.token, &released);
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while (now.tv_sec - start.tv_sec < 3);
  sqlite3_close(db);
  fencing_store_free(store);
  _exit(checks_failed == 0 ? 0 : 7);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

static void test_race(void) {
  setup("race");
  int reports[2];
  REQUIRE(pipe(reports) == 0);
  pid_t pids[RACERS];
  for (int i = 0; i < RACERS; i++) {
    pids[i] = fork();
    REQUIRE(pids[i] >= 0);
    if (pids[i] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      close(reports[0]);
      racer(i + 1, reports[1]);
    }
  }
  close(reports[1]);
  static uint64_t committed[100000];
  size_t n_committed = 0, rejected = 0;
  struct report report;
  while (read_full(reports[0], &report, sizeof report)) {
    if (report.status == FENCING_OK) {
      REQUIRE(n_committed < sizeof committed / sizeof committed[0]);
      committed[n_committed++] = report.token;
    } else {
      CHECK(report.status == FENCING_STALE_TOKEN);
      rejected++;
    }
  }
  close(reports[0]);
  for (int i = 0; i < RACERS; i++) {
    int wstatus = 0;
    CHECK(waitpid(pids[i], &wstatus, 0) == pids[i] && WIFEXITED(wstatus) &&
          WEXITSTATUS(wstatus) == 0);
  }
  /* The row's history is every committed update in commit order: the tokens
   * never go down, and no rejected transaction left a trace. */
  sqlite3 *db = user_open();
  sqlite3_stmt *st = NULL;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT history FROM report_state WHERE id = 7", -1, &st, NULL) ==
          SQLITE_OK);
  REQUIRE(sqlite3_step(st) == SQLITE_ROW);
  char *history = strdup((const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  static uint64_t written[100000];
  size_t n_written = 0;
  for (char *t = strtok(history, ","); t != NULL; t = strtok(NULL, ",")) {
    REQUIRE(n_written < sizeof written / sizeof written[0]);
    written[n_written++] = strtoull(t, NULL, 10);
  }
  free(history);
  bool ascending = true;
  for (size_t i = 1; i < n_written; i++) {
    ascending = ascending && written[i - 1] <= written[i];
  }
  CHECK(ascending);
  CHECK(n_written == n_committed);
  qsort(committed, n_committed, sizeof committed[0], cmp_u64);
  CHECK(n_written == n_committed &&
        memcmp(written, committed, n_written * sizeof written[0]) == 0);
  CHECK(rejected > 0); /* the race needs stale holders to mean anything */
  printf("sqlite3 race: %zu committed, %zu stale transactions rolled back\n", n_written, rejected);
  cleanup();
}

/* fencing_migrate makes the file and its schema without opening a store:
 * fencing_check works at once; a second call changes nothing. */
static void test_migrate(void) {
  fresh_files("migrate");
  CHECK(fencing_migrate(url) == FENCING_OK);
  CHECK(fencing_migrate(url) == FENCING_OK);
  sqlite3 *db = user_open();
  exec_ok(db, "INSERT INTO fencing_check (scope, token) VALUES ('s', 2)");
  CHECK(sqlite3_exec(db, "INSERT INTO fencing_check (scope, token) VALUES ('s', 1)", NULL, NULL,
                     NULL) != SQLITE_OK);
  CHECK(fencing_error_from_sqlite(sqlite3_errmsg(db)) == FENCING_STALE_TOKEN);
  sqlite3_close(db);
  cleanup();
  CHECK(fencing_migrate("memory:") == FENCING_OK);
  CHECK(fencing_migrate(NULL) == FENCING_NULL_PARAMETER);
  CHECK(fencing_migrate("sqlite://x.db") == FENCING_INVALID_ARGUMENT);
}

int main(void) {
  alarm(LIMIT_S);
  test_migrate();
  printf("sqlite3 library %s\n", sqlite3_libversion());
  test_mapping();
  test_paused_worker();
  test_race();
  test_rules();
  test_bad_input();
  return check_summary();
}
