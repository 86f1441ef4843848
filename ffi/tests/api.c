/* Every function of the C ABI on a working store: what each writes to its
 * out-parameters, the detail numbers after each kind of rejection, the
 * result objects (entry, page, rejection list, text) and their accessors.
 * `api memory` or `api sqlite` (a fresh database file). */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static char db_path[64];
static const char *backend;

/* Opens a fresh store with `query` ("" or "clock=manual&strict=true"). */
static fencing_store *open_store(const char *query) {
  char url[256];
  fencing_store *s = NULL;
  if (strcmp(backend, "sqlite") == 0) {
    if (db_path[0] != '\0') {
      remove_store(db_path);
    } else {
      strcpy(db_path, "/tmp/fencing-c-api-XXXXXX");
      int fd = mkstemp(db_path);
      REQUIRE(fd >= 0);
      close(fd);
      unlink(db_path);
    }
    snprintf(url, sizeof url, "sqlite:%s%s%s", db_path, query[0] ? "?" : "", query);
  } else {
    snprintf(url, sizeof url, "memory:%s%s", query[0] ? "?" : "", query);
  }
  REQUIRE(fencing_store_open(url, &s) == FENCING_OK);
  REQUIRE(s != NULL);
  return s;
}

static void cleanup_db(void) {
  if (db_path[0] != '\0') {
    remove_store(db_path);
  }
}

static fencing_error last(void) {
  fencing_error e;
  REQUIRE(fencing_last_error(&e) == FENCING_OK);
  return e;
}

static void test_version(void) {
  char numbers[64];
  snprintf(numbers, sizeof numbers, "%d.%d.%d", FENCING_VERSION_MAJOR, FENCING_VERSION_MINOR,
           FENCING_VERSION_PATCH);
  CHECK_STR(FENCING_VERSION, numbers);
  CHECK_STR(fencing_version(), FENCING_VERSION);
  CHECK_STR(fencing_status_name(FENCING_OK), "OK");
  CHECK_STR(fencing_status_name(FENCING_STALE_TOKEN), "STALE_TOKEN");
  CHECK_STR(fencing_status_name(FENCING_CLOSED), "CLOSED");
  CHECK_STR(fencing_status_name(FENCING_PANIC), "PANIC");
  CHECK_STR(fencing_status_name(12), "UNKNOWN");
  CHECK_STR(fencing_status_name(0xFFFFFFFFu), "UNKNOWN");
}

static void test_token_text(void) {
  static const struct {
    const char *text;
    uint64_t value;
  } good[] = {{"0", 0},
              {"1", 1},
              {"42", 42},
              {"9007199254740993", 9007199254740993ull}, /* 2^53 + 1 */
              {"9223372036854775807", 9223372036854775807ull}};
  static const char *bad[] = {"",     "00",   "01",  "+1", "-1", " 1", "1 ", "1e3", "1.0",
                              "0x10", "9223372036854775808", "18446744073709551615",
                              "18446744073709551616", "99999999999999999999"};
  char buf[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n = 0;
  for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
    uint64_t v = 77;
    CHECK_OK(fencing_token_parse(good[i].text, &v));
    CHECK_U64(v, good[i].value);
    CHECK_OK(fencing_token_format(good[i].value, buf, sizeof buf, &n));
    CHECK_STR(buf, good[i].text);
    CHECK_U64(n, strlen(good[i].text));
  }
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint64_t v = 77;
    CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_token_parse(bad[i], &v));
    CHECK_U64(v, 77);
    CHECK(last().status == FENCING_INVALID_ARGUMENT);
  }
  /* 19 digits need 20 bytes; nothing is written when the buffer is short. */
  memset(buf, 'x', sizeof buf);
  n = 5;
  CHECK_STATUS(FENCING_BUFFER_TOO_SMALL, fencing_token_format(FENCING_MAX_TOKEN, buf, 19, &n));
  CHECK(buf[0] == 'x' && n == 5);
  CHECK_OK(fencing_token_format(7, buf, 2, &n));
  CHECK_STR(buf, "7");
  CHECK_STATUS(FENCING_INVALID_ARGUMENT,
               fencing_token_format((uint64_t)FENCING_MAX_TOKEN + 1, buf, sizeof buf, &n));
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_token_format(UINT64_MAX, buf, sizeof buf, &n));
}

static void test_counter(void) {
  /* Jumps unbounded: the counter goes to 2^53 + 1 and the largest token. */
  fencing_store *s = open_store("jumps=unbounded");
  uint64_t t = 0, c = 0;
  CHECK_OK(fencing_next_token(s, "c", &t));
  CHECK_U64(t, 1);
  CHECK_OK(fencing_next_token(s, "c", &t));
  CHECK_U64(t, 2);
  CHECK_OK(fencing_advance_counter(s, "c", 1, &c));
  CHECK_U64(c, 2); /* never lowered */
  CHECK_OK(fencing_advance_counter(s, "c", 9007199254740993ull, &c));
  CHECK_U64(c, 9007199254740993ull);
  CHECK_OK(fencing_next_token(s, "c", &t));
  CHECK_U64(t, 9007199254740994ull);
  /* Exhaustion: at the maximum nothing is issued, nothing wraps. */
  CHECK_OK(fencing_advance_counter(s, "c", FENCING_MAX_TOKEN, &c));
  CHECK_U64(c, FENCING_MAX_TOKEN);
  t = 5;
  CHECK_STATUS(FENCING_TOKEN_EXHAUSTED, fencing_next_token(s, "c", &t));
  CHECK_U64(t, 5);
  CHECK(last().status == FENCING_TOKEN_EXHAUSTED);
  fencing_lease l;
  CHECK_STATUS(FENCING_TOKEN_EXHAUSTED, fencing_acquire(s, "c", "A", 1000, &l));
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(s, "c", &info));
  CHECK_U64(info.counter, FENCING_MAX_TOKEN);
  CHECK(!info.has_lease);
  /* A write with the greatest token is fine, and reads back exactly. */
  fencing_fence f = {.token = FENCING_MAX_TOKEN};
  fencing_receipt r;
  CHECK_OK(fencing_put(s, "c", "k", (const uint8_t *)"v", 1, &f, &r));
  CHECK_U64(r.token, FENCING_MAX_TOKEN);
  CHECK_OK(fencing_fence_of(s, "c", &t));
  CHECK_U64(t, FENCING_MAX_TOKEN);
  fencing_store_free(s);
}

static void test_leases(void) {
  fencing_store *s = open_store("clock=manual");
  fencing_lease a, b, renewed;
  fencing_error e;
  bool released = true;
  uint64_t fence = 0;

  CHECK_OK(fencing_acquire(s, "report", "worker-a@host:1", 1000, &a));
  CHECK_U64(a.token, 1);
  CHECK_U64(a.ttl_ms, 1000);
  CHECK_U64(a.remaining_ms, 1000);
  CHECK_STR(a.holder, "worker-a@host:1");
  CHECK_STR(a.scope, "report"); /* the lease carries its scope */
  CHECK(a.expires_at_ms > 1600000000000ull); /* wall-clock milliseconds */
  CHECK_OK(fencing_fence_of(s, "report", &fence));
  CHECK_U64(fence, 1); /* eager fencing */

  CHECK_OK(fencing_advance_clock(s, 250));
  memset(&b, 0x5A, sizeof b);
  CHECK_STATUS(FENCING_LEASE_HELD, fencing_acquire(s, "report", "worker-b", 1000, &b));
  CHECK(b.token == 0x5A5A5A5A5A5A5A5Aull); /* untouched */
  e = last();
  CHECK(e.status == FENCING_LEASE_HELD);
  CHECK_STR(e.scope, "report");
  CHECK_STR(e.holder, "worker-a@host:1");
  CHECK_U64(e.token, 1);
  CHECK_U64(e.remaining_ms, 750);
  CHECK(strstr(e.message, "worker-a@host:1") != NULL);

  CHECK_OK(fencing_renew(s, "report", 1, 2000, &renewed));
  CHECK_U64(renewed.token, 1);
  CHECK_U64(renewed.remaining_ms, 2000);
  CHECK_OK(fencing_advance_clock(s, 2000)); /* now == expiry: expired */
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_renew(s, "report", 1, 2000, &renewed));
  e = last();
  CHECK_STR(e.scope, "report");
  CHECK_U64(e.current_token, 0);
  CHECK(e.current_holder == NULL);
  CHECK_U64(e.token, 0);
  CHECK(e.holder == NULL);

  CHECK_OK(fencing_acquire(s, "report", "worker-b", 1000, &b));
  CHECK_U64(b.token, 2);
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_renew(s, "report", 1, 1000, &renewed));
  e = last();
  CHECK_U64(e.current_token, 2);
  CHECK_STR(e.current_holder, "worker-b");
  /* The deprecated copies, kept until 0.2 (ffi/README.md). */
  CHECK_U64(e.token, 2);
  CHECK_STR(e.holder, "worker-b");
  CHECK_OK(fencing_release(s, "report", 1, &released));
  CHECK(!released); /* never touches the newer lease */
  CHECK_OK(fencing_release(s, "report", 2, &released));
  CHECK(released);

  /* acquire_wait: free at once; TIMEOUT while held (manual clock). */
  CHECK_OK(fencing_acquire_wait(s, "w", "A", 60000, 1000, &a));
  CHECK_STATUS(FENCING_TIMEOUT, fencing_acquire_wait(s, "w", "B", 1000, 20, &b));
  CHECK(last().status == FENCING_TIMEOUT);
  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(s, "w", &info));
  CHECK(info.has_lease);
  CHECK_STR(info.lease.holder, "A");
  CHECK_U64(info.lease.token, a.token);
  CHECK_U64(info.counter, 1);
  CHECK_U64(info.fence, 1);
  CHECK_U64(info.entries, 0);

  /* Retire refuses a live lease, then drops the scope. */
  bool retired = true;
  CHECK_STATUS(FENCING_LEASE_HELD, fencing_retire(s, "w", &retired));
  CHECK(retired);
  CHECK_OK(fencing_release(s, "w", a.token, &released));
  CHECK_OK(fencing_retire(s, "w", &retired));
  CHECK(retired);
  CHECK_OK(fencing_retire(s, "never-seen", &retired));
  CHECK(!retired);
  /* The floor: the scope created again starts above every token of its
     retired life, sealed. */
  CHECK_OK(fencing_fence_of(s, "w", &fence));
  CHECK_U64(fence, 1);
  fencing_fence old = {.token = 1};
  fencing_receipt r;
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "w", "k", NULL, 0, &old, &r));
  /* The failover step: every earlier token stale, new ones above the base.
     The store's ceiling (1 + 2^32 after the first token) is below its jump
     limit (2^48 before any step): the base is the step above the limit. */
  uint64_t base = 0, next = 0;
  const uint64_t want = (UINT64_C(1) << 48) + FENCING_FAILOVER_STEP;
  CHECK_OK(fencing_failover(s, &base));
  CHECK_U64(base, want);
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "w", "k", NULL, 0, &old, &r));
  CHECK_OK(fencing_fence_of(s, "never-seen", &fence));
  CHECK_U64(fence, want);
  CHECK_OK(fencing_next_token(s, "never-seen", &next));
  CHECK_U64(next, want + 1);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_failover(s, NULL));
  fencing_store_free(s);
}

static void test_fenced_store(void) {
  fencing_store *s = open_store("");
  fencing_fence f1 = {.token = 1}, f2 = {.token = 2, .holder = "worker-b"};
  fencing_receipt r = {0, 0};
  fencing_entry *entry = NULL;
  fencing_error e;

  /* First write on a fresh scope; equal token again; empty value. */
  CHECK_OK(fencing_put(s, "s", "body", (const uint8_t *)"one", 3, &f1, &r));
  CHECK_U64(r.version, 1);
  CHECK_U64(r.token, 1);
  CHECK_OK(fencing_put(s, "s", "body", NULL, 0, &f1, &r));
  CHECK_U64(r.version, 2);
  CHECK_OK(fencing_get(s, "s", "body", NULL, &entry));
  REQUIRE(entry != NULL);
  CHECK_U64(fencing_entry_value_len(entry), 0);
  CHECK_U64(fencing_entry_version(entry), 2);
  fencing_entry_free(entry);

  /* Binary values with NUL and non-UTF-8 bytes round-trip. */
  static const uint8_t bin[] = {0x00, 0xff, 0x10, 0xc3};
  CHECK_OK(fencing_put(s, "s", "bin", bin, sizeof bin, &f2, &r));
  CHECK_OK(fencing_get(s, "s", "bin", NULL, &entry));
  REQUIRE(entry != NULL);
  CHECK_U64(fencing_entry_value_len(entry), 4);
  CHECK(memcmp(fencing_entry_value(entry), bin, 4) == 0);
  CHECK_U64(fencing_entry_token(entry), 2);
  CHECK_U64(fencing_entry_version(entry), 1);
  fencing_entry_free(entry);

  /* The stale holder: rejected with presented/current, nothing changes. */
  r.version = 99;
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "s", "body", (const uint8_t *)"old", 3, &f1, &r));
  CHECK_U64(r.version, 99);
  e = last();
  CHECK_STR(e.scope, "s");
  CHECK_U64(e.presented, 1);
  CHECK_U64(e.current, 2);
  CHECK_OK(fencing_get(s, "s", "body", NULL, &entry));
  CHECK_U64(fencing_entry_version(entry), 2);
  CHECK_U64(fencing_entry_token(entry), 1);
  fencing_entry_free(entry);
  /* A checked read with the stale token is stale too; missing is NULL. */
  entry = (fencing_entry *)&r;
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_get(s, "s", "body", &f1, &entry));
  CHECK(entry == (fencing_entry *)&r);
  CHECK_OK(fencing_get(s, "s", "missing", &f2, &entry));
  CHECK(entry == NULL);

  /* seq */
  fencing_fence s3 = {.token = 3, .seq = 5, .has_seq = true};
  CHECK_OK(fencing_claim(s, "s", &s3));
  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER, fencing_put(s, "s", "body", NULL, 0, &s3, &r));
  e = last();
  CHECK_U64(e.presented, 5);
  CHECK_U64(e.last, 5);
  s3.seq = 6;
  CHECK_OK(fencing_put(s, "s", "body", NULL, 0, &s3, &r));

  /* expected_version through fencing_execute */
  fencing_fence f3 = {.token = 3};
  fencing_op cas = {.kind = FENCING_OP_PUT, .key = "body", .value = (const uint8_t *)"x",
                    .value_len = 1, .has_expected_version = true, .expected_version = 9};
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_execute(s, "s", &f3, &cas, &r));
  e = last();
  CHECK_U64(e.expected, 9);
  CHECK_U64(e.actual, 3);
  cas.expected_version = 3;
  CHECK_OK(fencing_execute(s, "s", &f3, &cas, &r));
  CHECK_U64(r.version, 4);
  fencing_op create = {.kind = FENCING_OP_PUT, .key = "new", .has_expected_version = true};
  CHECK_OK(fencing_execute(s, "s", &f3, &create, &r));
  CHECK_U64(r.version, 1);
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_execute(s, "s", &f3, &create, &r));
  CHECK_U64(last().actual, 1);

  /* delete, NOT_FOUND with scope and key */
  CHECK_OK(fencing_delete(s, "s", "new", &f3, &r));
  CHECK_U64(r.version, 0);
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_delete(s, "s", "new", &f3, &r));
  e = last();
  CHECK_STR(e.scope, "s");
  CHECK_STR(e.key, "new");

  /* apply: all or nothing, receipts in order */
  fencing_op ops[3] = {
      {.kind = FENCING_OP_PUT, .key = "a", .value = (const uint8_t *)"1", .value_len = 1},
      {.kind = FENCING_OP_PUT, .key = "b", .value = (const uint8_t *)"2", .value_len = 1},
      {.kind = FENCING_OP_DELETE, .key = "nope"},
  };
  fencing_receipt receipts[3] = {{7, 7}, {7, 7}, {7, 7}};
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_apply(s, "s", &f3, ops, 3, receipts));
  CHECK(receipts[0].version == 7 && receipts[1].version == 7);
  CHECK_OK(fencing_get(s, "s", "a", NULL, &entry));
  CHECK(entry == NULL);
  ops[2].key = "a";
  CHECK_OK(fencing_apply(s, "s", &f3, ops, 3, receipts));
  CHECK_U64(receipts[0].version, 1);
  CHECK_U64(receipts[1].version, 1);
  CHECK_U64(receipts[2].version, 0);
  CHECK_U64(receipts[2].token, 3);

  /* list, paged */
  fencing_page *page = NULL;
  CHECK_OK(fencing_list(s, "s", NULL, 2, &page));
  REQUIRE(page != NULL);
  CHECK_U64(fencing_page_len(page), 2);
  CHECK_STR(fencing_page_key(page, 0), "b");
  CHECK_STR(fencing_page_key(page, 1), "bin");
  CHECK(fencing_page_key(page, 2) == NULL);
  CHECK_STR(fencing_page_next(page), "bin");
  char after[64];
  snprintf(after, sizeof after, "%s", fencing_page_next(page));
  fencing_page_free(page);
  CHECK_OK(fencing_list(s, "s", after, 2, &page));
  CHECK_U64(fencing_page_len(page), 1);
  CHECK_STR(fencing_page_key(page, 0), "body");
  CHECK(fencing_page_next(page) == NULL);
  fencing_page_free(page);

  fencing_scope_info info;
  CHECK_OK(fencing_scope_status(s, "s", &info));
  CHECK_U64(info.fence, 3);
  CHECK_U64(info.entries, 3);
  CHECK(!info.has_lease);

  /* metrics: counters, the rejection history, the Prometheus text */
  fencing_metrics m;
  CHECK_OK(fencing_metrics_snapshot(s, &m));
  CHECK_U64(m.writes_accepted, 8); /* 4 puts, 2 executes, 1 delete, 1 batch */
  CHECK_U64(m.stale_rejections, 2);
  CHECK_U64(m.sequence_rejections, 1);
  CHECK_U64(m.version_conflicts, 2);
  fencing_rejection_list *list = NULL;
  fencing_rejection rej;
  CHECK_OK(fencing_rejections(s, &list));
  REQUIRE(list != NULL);
  CHECK_U64(fencing_rejection_list_len(list), 3);
  CHECK_OK(fencing_rejection_list_get(list, 0, &rej));
  CHECK(rej.code == FENCING_STALE_TOKEN);
  CHECK_STR(rej.scope, "s");
  CHECK_STR(rej.key, "body");
  CHECK(rej.holder == NULL);
  CHECK_U64(rej.presented, 1);
  CHECK_U64(rej.current, 2);
  CHECK_OK(fencing_rejection_list_get(list, 2, &rej));
  CHECK(rej.code == FENCING_SEQUENCE_OUT_OF_ORDER);
  CHECK(rej.has_seq && rej.seq == 5);
  CHECK(rej.at_ms > 1600000000000ull);
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_rejection_list_get(list, 3, &rej));
  fencing_rejection_list_free(list);
  char *text = NULL;
  char *where = NULL;
  CHECK_OK(fencing_store_location(s, &where));
  REQUIRE(where != NULL);
  CHECK_OK(fencing_metrics_text(s, &text));
  REQUIRE(text != NULL);
  /* Every sample is labelled with the store's location, escaped as a
   * label value (a Windows path's backslashes are doubled). */
  char label[512];
  size_t at = 0;
  for (const char *c = where; *c != '\0' && at + 3 < sizeof label; c++) {
    if (*c == '\\' || *c == '"') {
      label[at++] = '\\';
    }
    label[at++] = *c;
  }
  label[at] = '\0';
  char want[1024];
  snprintf(want, sizeof want, "# TYPE fencing_writes_accepted_total counter\nfencing_writes_accepted_total{store=\"%s\"} 8\n", label);
  CHECK(strstr(text, want) != NULL);
  snprintf(want, sizeof want, "fencing_stale_rejections_total{store=\"%s\"} 2\n", label);
  CHECK(strstr(text, want) != NULL);
  CHECK(strstr(text, "# TYPE fencing_call_duration_seconds histogram\n") != NULL);
  fencing_string_free(where);
  fencing_string_free(text);
  text = NULL;
  CHECK_OK(fencing_store_location(s, &text));
  REQUIRE(text != NULL);
  if (strcmp(backend, "sqlite") == 0) {
#ifdef _WIN32
    /* The full path Windows gives the file (Z:\tmp\... under Wine): it
     * ends with the file's name. */
    const char *name = strrchr(db_path, '/') + 1;
    size_t len = strlen(text);
    CHECK(strncmp(text, "sqlite:", 7) == 0 && len > 7 + strlen(name) &&
          strcmp(text + len - strlen(name), name) == 0);
#else
    CHECK(strncmp(text, "sqlite:", 7) == 0 && strcmp(text + 7, db_path) == 0);
#endif
  } else {
    CHECK(strcmp(text, "memory:") == 0);
  }
  fencing_string_free(text);
  text = NULL;
  CHECK_OK(fencing_store_backend_kind(s, &text));
  REQUIRE(text != NULL);
  CHECK_STR(text, backend);
  fencing_string_free(text);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_store_backend_kind(NULL, &text));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_store_backend_kind(s, NULL));
  /* etcd_check is the etcd backend's: refused here, writing nothing. */
  char *txn = NULL;
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_etcd_check(s, "s", &f2, &txn));
  CHECK(txn == NULL);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_etcd_check(s, "s", NULL, &txn));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_etcd_check(s, "s", &f2, NULL));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_etcd_check(NULL, "s", &f2, &txn));

  /* last_error_message copies into a caller buffer */
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_delete(s, "s", "new", &f3, &r));
  char msg[256];
  size_t n = 0;
  CHECK_OK(fencing_last_error_message(msg, sizeof msg, &n));
  CHECK_U64(n, strlen(msg));
  CHECK_STR(msg, last().message);
  CHECK(strstr(msg, "new") != NULL);

  /* close: every later call is CLOSED; the handle is still freed */
  bool closed = true;
  CHECK_OK(fencing_store_is_closed(s, &closed));
  CHECK(!closed);
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_store_is_closed(NULL, &closed));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_store_is_closed(s, NULL));
  CHECK_OK(fencing_store_close(s));
  CHECK_OK(fencing_store_is_closed(s, &closed));
  CHECK(closed);
  uint64_t t = 0;
  CHECK_STATUS(FENCING_CLOSED, fencing_next_token(s, "s", &t));
  CHECK_STATUS(FENCING_CLOSED, fencing_put(s, "s", "k", NULL, 0, &f3, &r));
  CHECK_STATUS(FENCING_CLOSED, fencing_get(s, "s", "k", NULL, &entry));
  CHECK_OK(fencing_store_close(s));
  fencing_store_free(s);
}

/* ping: OK while open, CLOSED after close, a NULL handle refused. */
static void test_ping(void) {
  fencing_store *s = open_store("");
  CHECK_OK(fencing_ping(s));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_ping(NULL));
  CHECK(strstr(last().message, "store") != NULL);
  CHECK_OK(fencing_store_close(s));
  CHECK_STATUS(FENCING_CLOSED, fencing_ping(s));
  fencing_store_free(s);
}

static void test_options(void) {
  /* strict: a token writes once; lazy fencing: the old holder writes on. */
  fencing_store *s = open_store("strict=true");
  fencing_fence f = {.token = 5};
  fencing_receipt r;
  CHECK_OK(fencing_put(s, "s", "k", NULL, 0, &f, &r));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "s", "k", NULL, 0, &f, &r));
  CHECK_U64(last().current, 5);
  fencing_store_free(s);

  s = open_store("eager_fencing=false&clock=manual");
  fencing_lease a, b;
  CHECK_OK(fencing_acquire(s, "s", "A", 10, &a));
  CHECK_OK(fencing_advance_clock(s, 10));
  CHECK_OK(fencing_acquire(s, "s", "B", 10, &b));
  fencing_fence fa = {.token = a.token};
  CHECK_OK(fencing_put(s, "s", "k", NULL, 0, &fa, &r));
  fencing_store_free(s);

  /* advance_clock needs the manual clock */
  s = open_store("");
  CHECK_STATUS(FENCING_INVALID_ARGUMENT, fencing_advance_clock(s, 1));
  fencing_store_free(s);
}

/* Every fencing_receipt out-parameter may be NULL: the write happens, the
 * receipt is not written anywhere. */
static void test_receipts_are_optional(void) {
  fencing_store *s = open_store("");
  fencing_fence f = {.token = 1};
  const uint8_t *v = (const uint8_t *)"v";
  fencing_entry *entry = NULL;
  fencing_op op = {.kind = FENCING_OP_PUT, .key = "e", .value = v, .value_len = 1};
  fencing_op ops[2] = {op, op};
  ops[1].key = "f";
  CHECK_OK(fencing_put(s, "s", "k", v, 1, &f, NULL));
  CHECK_OK(fencing_get(s, "s", "k", NULL, &entry));
  CHECK(entry != NULL && fencing_entry_version(entry) == 1);
  fencing_entry_free(entry);
  CHECK_OK(fencing_execute(s, "s", &f, &op, NULL));
  CHECK_OK(fencing_apply(s, "s", &f, ops, 2, NULL));
  CHECK_OK(fencing_delete(s, "s", "k", &f, NULL));
  entry = NULL;
  CHECK_OK(fencing_get(s, "s", "k", NULL, &entry));
  CHECK(entry == NULL);
  /* A rejection with no receipt wanted is still the rejection. */
  fencing_fence stale = {.token = 1};
  CHECK_OK(fencing_claim(s, "s", &(fencing_fence){.token = 2}));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_put(s, "s", "k", v, 1, &stale, NULL));
  fencing_store_free(s);
}

int main(int argc, char **argv) {
  if (argc != 2 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "sqlite") != 0)) {
    fprintf(stderr, "usage: %s memory|sqlite\n", argv[0]);
    return 2;
  }
  backend = argv[1];
  /* No failure yet on this thread: OK and an empty message. */
  fencing_error e;
  CHECK_OK(fencing_last_error(&e));
  CHECK(e.status == FENCING_OK && e.message != NULL && e.message[0] == '\0' && e.scope == NULL);

  test_version();
  test_token_text();
  test_counter();
  test_leases();
  test_fenced_store();
  test_receipts_are_optional();
  test_ping();
  test_options();
  cleanup_db();
  printf("api on %s: ", backend);
  return check_summary();
}
