/* fencing_error_from_sqlstate: fencing's SQLSTATEs (class FN) mapped to the
 * status and the details of fencing_last_error, for callers who run
 * `SELECT <schema>.check(scope, token)` in their own transaction through
 * libpq.
 *
 * Part 1 needs no server: every FN state, DETAIL texts as the server writes
 * them, hostile text, other SQLSTATEs, bad input.
 * Part 2 (`sqlstate postgres`): the real story on the server named by
 * FENCING_TEST_PG_URL, in a fresh schema: tokens A then B from the fencing
 * store, the user's own table, a stale check rolls back the user's UPDATE and
 * maps to STALE_TOKEN (presented A, current B), a current one commits, a seq
 * out of order maps to SEQUENCE_OUT_OF_ORDER. Skipped (exit 0) without the
 * variable, failed when FENCING_REQUIRE_PG=1. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef FENCING_WITH_LIBPQ
#include <libpq-fe.h>
#endif

#include "check.h"

static fencing_error last(void) {
  fencing_error e;
  REQUIRE(fencing_last_error(&e) == FENCING_OK);
  return e;
}

static void test_every_state(void) {
  static const struct {
    const char *state;
    fencing_status status;
  } states[] = {
      {"FN001", FENCING_STALE_TOKEN},     {"FN002", FENCING_SEQUENCE_OUT_OF_ORDER},
      {"FN003", FENCING_VERSION_MISMATCH}, {"FN004", FENCING_NOT_FOUND},
      {"FN005", FENCING_LEASE_HELD},       {"FN006", FENCING_LEASE_LOST},
      {"FN007", FENCING_TOKEN_EXHAUSTED},  {"FN008", FENCING_INVALID_ARGUMENT},
  };
  for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
    CHECK_STATUS(states[i].status, fencing_error_from_sqlstate(states[i].state, NULL));
    CHECK(last().status == states[i].status);
    /* Garbage details still give the code. */
    CHECK_STATUS(states[i].status, fencing_error_from_sqlstate(states[i].state, "not json"));
  }
}

static void test_details(void) {
  /* As v1.sql writes them: numbers as text, the scope JSON-escaped. */
  CHECK_STATUS(FENCING_STALE_TOKEN,
               fencing_error_from_sqlstate(
                   "FN001", "{\"code\": \"STALE_TOKEN\", \"scope\": \"r'\\\"\\\\; DROP TABLE x; -- "
                            "\\ud83d\\udd12\", \"current\": \"9223372036854775807\", "
                            "\"presented\": \"9007199254740993\"}"));
  fencing_error e = last();
  CHECK(e.status == FENCING_STALE_TOKEN);
  CHECK_STR(e.scope, "r'\"\\; DROP TABLE x; -- \xF0\x9F\x94\x92");
  CHECK_U64(e.presented, 9007199254740993u);
  CHECK_U64(e.current, 9223372036854775807u);

  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER,
               fencing_error_from_sqlstate(
                   "FN002", "{\"code\": \"SEQUENCE_OUT_OF_ORDER\", \"last\": \"5\", \"presented\": \"3\"}"));
  e = last();
  CHECK_U64(e.presented, 3);
  CHECK_U64(e.last, 5);
  CHECK(e.scope == NULL);

  CHECK_STATUS(FENCING_LEASE_HELD,
               fencing_error_from_sqlstate("FN005", "{\"scope\": \"s\", \"holder\": \"b\", "
                                                    "\"token\": \"7\", \"remaining_ms\": 250}"));
  e = last();
  CHECK_STR(e.holder, "b");
  CHECK_U64(e.token, 7);
  CHECK_U64(e.remaining_ms, 250);

  CHECK_STATUS(FENCING_NOT_FOUND,
               fencing_error_from_sqlstate("FN004", "{\"scope\": \"s\", \"key\": \"k\\u00e9\"}"));
  e = last();
  CHECK_STR(e.key, "k\xC3\xA9");
}

static void test_not_ours_and_bad_input(void) {
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_error_from_sqlstate("FN003", NULL));
  /* Other SQLSTATEs are not fencing's: FENCING_OK, the last error stays. */
  const char *others[] = {"23505", "40001", "P0001", "FN000", "FN009", "fn001", "", "FN0011"};
  for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
    CHECK_OK(fencing_error_from_sqlstate(others[i], "{\"code\": \"STALE_TOKEN\"}"));
    CHECK(last().status == FENCING_VERSION_MISMATCH);
  }
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_error_from_sqlstate(NULL, NULL));
  CHECK(strstr(last().message, "sqlstate") != NULL);
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_error_from_sqlstate("FN\xff", NULL));
  CHECK_STATUS(FENCING_INVALID_UTF8, fencing_error_from_sqlstate("FN001", "{\"scope\": \"\xc3\"}"));
  CHECK(strstr(last().message, "detail") != NULL);
}

#ifdef FENCING_WITH_LIBPQ

static PGconn *conn;

/* Runs `sql` expecting success. */
static void exec_ok(const char *sql) {
  PGresult *r = PQexec(conn, sql);
  ExecStatusType st = PQresultStatus(r);
  if (!CHECK(st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)) {
    fprintf(stderr, "  %s: %s", sql, PQerrorMessage(conn));
  }
  PQclear(r);
}

/* SELECT <schema>.check(scope, token[, seq]) inside the open transaction:
 * FENCING_OK when it passed, else what fencing_error_from_sqlstate makes of
 * the server's error. */
static fencing_status check_in_tx(const char *schema, const char *scope, uint64_t token,
                                  const char *seq) {
  char sql[256], token_text[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n;
  REQUIRE(fencing_token_format(token, token_text, sizeof token_text, &n) == FENCING_OK);
  snprintf(sql, sizeof sql, seq ? "SELECT \"%s\".check($1, $2::bigint, $3::bigint)"
                                : "SELECT \"%s\".check($1, $2::bigint)", schema);
  const char *params[3] = {scope, token_text, seq};
  PGresult *r = PQexecParams(conn, sql, seq ? 3 : 2, NULL, params, NULL, NULL, 0);
  fencing_status status = FENCING_OK;
  if (PQresultStatus(r) != PGRES_TUPLES_OK) {
    status = fencing_error_from_sqlstate(PQresultErrorField(r, PG_DIAG_SQLSTATE),
                                         PQresultErrorField(r, PG_DIAG_MESSAGE_DETAIL));
    if (status == FENCING_OK) {
      fprintf(stderr, "  not a fencing error: %s", PQerrorMessage(conn));
      status = FENCING_BACKEND;
    }
  }
  PQclear(r);
  return status;
}

static char *report_body(const char *schema) {
  char sql[160];
  snprintf(sql, sizeof sql, "SELECT body FROM \"%s\".report WHERE id = 1", schema);
  PGresult *r = PQexec(conn, sql);
  REQUIRE(PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1);
  char *body = strdup(PQgetvalue(r, 0, 0));
  PQclear(r);
  return body;
}

static int test_postgres(void) {
  const char *base = getenv("FENCING_TEST_PG_URL");
  if (base == NULL || base[0] == '\0') {
    const char *require = getenv("FENCING_REQUIRE_PG");
    if (require != NULL && strcmp(require, "1") == 0) {
      fprintf(stderr, "FENCING_REQUIRE_PG=1 but FENCING_TEST_PG_URL is not set: run under "
                      "scripts/pg-cluster run\n");
      return 1;
    }
    printf("skipped: no PostgreSQL (run under `scripts/pg-cluster run -- ...`)\n");
    return 0;
  }
  char schema[64], url[1024], sql[512];
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  snprintf(schema, sizeof schema, "t_c_sqlstate_%ld_%ld%09ld", (long)getpid(), (long)now.tv_sec,
           now.tv_nsec);
  snprintf(url, sizeof url, "%s?schema=%s", base, schema);

  fencing_store *store = NULL;
  REQUIRE(fencing_store_open(url, &store) == FENCING_OK);
  const char *scope = "report:7 'quoted' \\ \xF0\x9F\x94\x92";
  fencing_lease a, b;
  bool released = false;
  REQUIRE(fencing_acquire(store, scope, "worker-a", 60000, &a) == FENCING_OK);
  /* A is done (or paused past its lease): B takes over. */
  CHECK_OK(fencing_release(store, scope, a.token, &released));
  CHECK(released);
  REQUIRE(fencing_acquire(store, scope, "worker-b", 60000, &b) == FENCING_OK);
  CHECK(b.token > a.token);

  conn = PQconnectdb(base);
  REQUIRE(PQstatus(conn) == CONNECTION_OK);
  snprintf(sql, sizeof sql,
           "CREATE TABLE \"%s\".report (id int PRIMARY KEY, body text NOT NULL);"
           "INSERT INTO \"%s\".report VALUES (1, 'v0')",
           schema, schema);
  exec_ok(sql);
  char update[160];
  snprintf(update, sizeof update, "UPDATE \"%s\".report SET body = 'by A' WHERE id = 1", schema);

  /* A, stale: its UPDATE (run before the check) rolls back with the check. */
  exec_ok("BEGIN");
  exec_ok(update);
  CHECK_STATUS(FENCING_STALE_TOKEN, check_in_tx(schema, scope, a.token, NULL));
  fencing_error e = last();
  CHECK_STR(e.scope, scope);
  CHECK_U64(e.presented, a.token);
  CHECK_U64(e.current, b.token);
  exec_ok("ROLLBACK");
  char *body = report_body(schema);
  CHECK_STR(body, "v0");
  free(body);

  /* B, current: commits. */
  exec_ok("BEGIN");
  CHECK_OK(check_in_tx(schema, scope, b.token, "5"));
  snprintf(update, sizeof update, "UPDATE \"%s\".report SET body = 'by B' WHERE id = 1", schema);
  exec_ok(update);
  exec_ok("COMMIT");
  body = report_body(schema);
  CHECK_STR(body, "by B");
  free(body);
  uint64_t fence = 0;
  CHECK_OK(fencing_fence_of(store, scope, &fence));
  CHECK_U64(fence, b.token);

  /* B again with seq 5 (not after 5): SEQUENCE_OUT_OF_ORDER. */
  exec_ok("BEGIN");
  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER, check_in_tx(schema, scope, b.token, "5"));
  e = last();
  CHECK_U64(e.presented, 5);
  CHECK_U64(e.last, 5);
  exec_ok("ROLLBACK");

  PQfinish(conn);
  fencing_store_free(store);
  return 0;
}
#endif

int main(int argc, char **argv) {
  test_every_state();
  test_details();
  test_not_ours_and_bad_input();
  if (argc > 1 && strcmp(argv[1], "postgres") == 0) {
#ifdef FENCING_WITH_LIBPQ
    if (test_postgres() != 0) {
      return 1;
    }
#else
    fprintf(stderr, "built without libpq: cannot run the postgres part\n");
    return 1;
#endif
  }
  return check_summary();
}
