/* Bad input of every kind through the C ABI: NULL for every pointer
 * argument, invalid UTF-8 in every string, empty and oversized names,
 * tokens 0 and 2^63, bad sizes and bad URLs. Each call must return its
 * status, leave its out-parameters alone, set the thread's last error, and
 * change nothing in the store (compared before and after every call).
 * `bad_input memory` or `bad_input sqlite`. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static const char *const NOT_UTF8[] = {
    "\xff",             /* never valid */
    "ab\xc3",           /* truncated sequence */
    "\xc0\x80",         /* overlong NUL */
    "\xed\xa0\x80",     /* UTF-16 surrogate */
    "\xf4\x90\x80\x80", /* above U+10FFFF */
};
#define N_NOT_UTF8 (sizeof NOT_UTF8 / sizeof *NOT_UTF8)

static const uint64_t BAD_TOKENS[] = {0, (uint64_t)FENCING_MAX_TOKEN + 1, UINT64_MAX};
#define N_BAD_TOKENS (sizeof BAD_TOKENS / sizeof *BAD_TOKENS)

static char long_scope[FENCING_MAX_SCOPE_BYTES + 2];
static char long_holder[FENCING_MAX_HOLDER_BYTES + 2];
static char long_key[FENCING_MAX_KEY_BYTES + 2];

static fencing_store *s;

/* Everything observable about the store, to compare before and after. */
typedef struct {
  fencing_scope_info scope, other, retirable;
  uint64_t fence;
  bool k_found, other_found;
  uint64_t k_version, k_token;
  size_t k_len;
  char k_value[16];
  fencing_metrics metrics;
  size_t rejections;
} state;

static state snapshot(void) {
  state st;
  fencing_entry *e = NULL;
  fencing_rejection_list *l = NULL;
  memset(&st, 0, sizeof st);
  REQUIRE(fencing_scope_status(s, "s", &st.scope) == FENCING_OK);
  REQUIRE(fencing_scope_status(s, "other", &st.other) == FENCING_OK);
  REQUIRE(fencing_scope_status(s, "r", &st.retirable) == FENCING_OK);
  REQUIRE(fencing_fence_of(s, "s", &st.fence) == FENCING_OK);
  REQUIRE(fencing_get(s, "s", "k", NULL, &e) == FENCING_OK);
  st.k_found = e != NULL;
  if (e != NULL) {
    st.k_version = fencing_entry_version(e);
    st.k_token = fencing_entry_token(e);
    st.k_len = fencing_entry_value_len(e);
    memcpy(st.k_value, fencing_entry_value(e), st.k_len < 16 ? st.k_len : 16);
    fencing_entry_free(e);
  }
  REQUIRE(fencing_get(s, "other", "k", NULL, &e) == FENCING_OK);
  st.other_found = e != NULL;
  fencing_entry_free(e);
  REQUIRE(fencing_metrics_snapshot(s, &st.metrics) == FENCING_OK);
  REQUIRE(fencing_rejections(s, &l) == FENCING_OK);
  st.rejections = fencing_rejection_list_len(l);
  fencing_rejection_list_free(l);
  return st;
}

static bool same_scope(const fencing_scope_info *a, const fencing_scope_info *b) {
  return a->counter == b->counter && a->fence == b->fence && a->entries == b->entries &&
         a->has_lease == b->has_lease &&
         (!a->has_lease || (a->lease.token == b->lease.token &&
                            a->lease.expires_at_ms == b->lease.expires_at_ms &&
                            strcmp(a->lease.holder, b->lease.holder) == 0));
}

static bool same(const state *a, const state *b) {
  return same_scope(&a->scope, &b->scope) && same_scope(&a->other, &b->other) &&
         same_scope(&a->retirable, &b->retirable) && a->fence == b->fence &&
         a->k_found == b->k_found && a->other_found == b->other_found &&
         a->k_version == b->k_version && a->k_token == b->k_token && a->k_len == b->k_len &&
         memcmp(a->k_value, b->k_value, sizeof a->k_value) == 0 &&
         memcmp(&a->metrics, &b->metrics, sizeof a->metrics) == 0 &&
         a->rejections == b->rejections;
}

static int check_refused_(fencing_status got, fencing_status want, const char *call,
                          const state *before, const char *file, int line) {
  int ok = check_status_(got, want, call, file, line);
  fencing_error e;
  state after = snapshot();
  if (!check_(fencing_last_error(&e) == FENCING_OK && e.status == want && e.message[0] != '\0',
              "the last error tells the status and a message", file, line)) {
    ok = 0;
  }
  if (!check_(same(before, &after), "the store did not change", file, line)) {
    fprintf(stderr, "    after: %s\n", call);
    ok = 0;
  }
  return ok;
}

/* The call returns `want`, sets the last error, and changes nothing. */
#define REFUSED(want, call)                                                   \
  do {                                                                        \
    state before_ = snapshot();                                               \
    check_refused_((call), (want), #call, &before_, __FILE__, __LINE__);      \
  } while (0)

/* The last error names the parameter. */
#define NAMES(param) CHECK(strstr(last_message(), param) != NULL)

/* Sentinel bytes in out-parameters, to see that a failure wrote nothing. */
#define SENTINEL 0x5A
static bool untouched(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) {
    if (b[i] != SENTINEL) {
      return false;
    }
  }
  return true;
}
#define POISON(x) memset(&(x), SENTINEL, sizeof(x))
#define UNTOUCHED(x) CHECK(untouched(&(x), sizeof(x)))

static void setup(const char *url) {
  fencing_lease l;
  fencing_receipt r;
  fencing_fence f = {.token = 1};
  uint64_t t;
  state before;
  REQUIRE(fencing_store_open(url, &s) == FENCING_OK);
  /* The comparison sees each kind of change the refused calls could make. */
  before = snapshot();
  REQUIRE(fencing_acquire(s, "s", "A", 3600000, &l) == FENCING_OK && l.token == 1);
  state leased = snapshot();
  CHECK(!same(&before, &leased));
  REQUIRE(fencing_put(s, "s", "k", (const uint8_t *)"v", 1, &f, &r) == FENCING_OK);
  state written = snapshot();
  CHECK(!same(&leased, &written));
  REQUIRE(fencing_next_token(s, "r", &t) == FENCING_OK); /* retirable */
  state issued = snapshot();
  CHECK(!same(&written, &issued));
  memset(long_scope, 's', sizeof long_scope - 1);
  memset(long_holder, 'h', sizeof long_holder - 1);
  memset(long_key, 'k', sizeof long_key - 1);
}

static void bad_urls(const char *db_dir) {
  static const char *bad[] = {"",          "memory",         "redis://localhost", "memory:?x=1",
                              "memory:?clock", "memory:?strict=yes", "memory:?clock=manual&clock=manual",
                              "sqlite:",   "SQLITE:x.db",    " memory:",
                              "sqlite://rel.db", "sqlite:///rel.db"};
  fencing_store *out;
  char url[5000], path[256];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    POISON(out);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_store_open(bad[i], &out));
    UNTOUCHED(out);
  }
  /* sqlite://rel.db would be /rel.db: the message shows the right spelling. */
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_store_open("sqlite://rel.db", &out));
  CHECK(strstr(last_message(), "sqlite:rel.db") != NULL);
  CHECK(strstr(last_message(), "sqlite:/rel.db") != NULL);
  /* over 4096 bytes */
  memset(url, 'x', sizeof url);
  memcpy(url, "memory:?", 8);
  url[sizeof url - 1] = '\0';
  POISON(out);
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_store_open(url, &out));
  UNTOUCHED(out);
  /* a directory that does not exist: BACKEND */
  snprintf(path, sizeof path, "sqlite:%s/missing-dir/x.db", db_dir);
  POISON(out);
  REFUSED(FENCING_BACKEND, fencing_store_open(path, &out));
  UNTOUCHED(out);
  for (size_t i = 0; i < N_NOT_UTF8; i++) {
    snprintf(url, sizeof url, "sqlite:%s/%s.db", db_dir, NOT_UTF8[i]);
    REFUSED(FENCING_INVALID_UTF8, fencing_store_open(url, &out));
    NAMES("url");
  }
  REFUSED(FENCING_NULL_PARAMETER, fencing_store_open(NULL, &out));
  NAMES("url");
  /* NULL out: refused before the store is opened, so no file appears. */
  snprintf(path, sizeof path, "%s/never-created.db", db_dir);
  snprintf(url, sizeof url, "sqlite:%s", path);
  REFUSED(FENCING_NULL_PARAMETER, fencing_store_open(url, NULL));
  NAMES("out");
  CHECK(access(path, F_OK) != 0);
}

static void bad_counter(void) {
  uint64_t t;
  POISON(t);
  REFUSED(FENCING_NULL_PARAMETER, fencing_next_token(NULL, "s", &t));
  NAMES("store");
  REFUSED(FENCING_NULL_PARAMETER, fencing_next_token(s, NULL, &t));
  NAMES("scope");
  REFUSED(FENCING_NULL_PARAMETER, fencing_next_token(s, "s", NULL)); /* issues nothing */
  NAMES("out_token");
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_next_token(s, "", &t));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_next_token(s, long_scope, &t));
  for (size_t i = 0; i < N_NOT_UTF8; i++) {
    REFUSED(FENCING_INVALID_UTF8, fencing_next_token(s, NOT_UTF8[i], &t));
  }
  UNTOUCHED(t);
  REFUSED(FENCING_NULL_PARAMETER, fencing_advance_counter(NULL, "s", 9, &t));
  REFUSED(FENCING_NULL_PARAMETER, fencing_advance_counter(s, NULL, 9, &t));
  REFUSED(FENCING_NULL_PARAMETER, fencing_advance_counter(s, "s", 9, NULL));
  REFUSED(FENCING_INVALID_UTF8, fencing_advance_counter(s, NOT_UTF8[0], 9, &t));
  for (size_t i = 0; i < N_BAD_TOKENS; i++) {
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_advance_counter(s, "s", BAD_TOKENS[i], &t));
  }
  UNTOUCHED(t);
}

static void bad_leases(void) {
  fencing_lease l;
  bool b;
  POISON(l);
  POISON(b);
  /* On "other", which has no lease: a call that went through would take it. */
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire(NULL, "other", "B", 1000, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire(s, NULL, "B", 1000, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire(s, "other", NULL, 1000, &l));
  NAMES("holder");
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire(s, "other", "B", 1000, NULL));
  NAMES("out_lease");
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "other", "", 1000, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "other", long_holder, 1000, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "", "B", 1000, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, long_scope, "B", 1000, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "other", "B", 0, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "other", "B", 31622400001ull, &l));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "other", "B", UINT64_MAX, &l));
  /* The argument check comes before LEASE_HELD on the held scope. */
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire(s, "s", "B", 0, &l));
  for (size_t i = 0; i < N_NOT_UTF8; i++) {
    REFUSED(FENCING_INVALID_UTF8, fencing_acquire(s, NOT_UTF8[i], "B", 1000, &l));
    REFUSED(FENCING_INVALID_UTF8, fencing_acquire(s, "other", NOT_UTF8[i], 1000, &l));
    NAMES("holder");
  }
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait(NULL, "other", "B", 1000, 10, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait(s, NULL, "B", 1000, 10, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait(s, "other", NULL, 1000, 10, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait(s, "other", "B", 1000, 10, NULL));
  fencing_cancel *cancel = fencing_cancel_new();
  REQUIRE(cancel != NULL);
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait_cancellable(NULL, "other", "B", 1000, 10, cancel, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait_cancellable(s, NULL, "B", 1000, 10, cancel, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait_cancellable(s, "other", NULL, 1000, 10, cancel, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait_cancellable(s, "other", "B", 1000, 10, NULL, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_acquire_wait_cancellable(s, "other", "B", 1000, 10, cancel, NULL));
  fencing_cancel_free(cancel);
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_acquire_wait(s, "other", "B", 0, 10, &l));
  REFUSED(FENCING_INVALID_UTF8, fencing_acquire_wait(s, "other", NOT_UTF8[1], 1000, 10, &l));

  REFUSED(FENCING_NULL_PARAMETER, fencing_renew(NULL, "s", 1, 1000, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_renew(s, NULL, 1, 1000, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_renew(s, "s", 1, 1000, NULL)); /* renews nothing */
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_renew(s, "s", 1, 0, &l));
  REFUSED(FENCING_INVALID_UTF8, fencing_renew(s, NOT_UTF8[2], 1, 1000, &l));
  for (size_t i = 0; i < N_BAD_TOKENS; i++) {
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_renew(s, "s", BAD_TOKENS[i], 1000, &l));
  }
  UNTOUCHED(l);

  REFUSED(FENCING_NULL_PARAMETER, fencing_release(NULL, "s", 1, &b));
  REFUSED(FENCING_NULL_PARAMETER, fencing_release(s, NULL, 1, &b));
  REFUSED(FENCING_NULL_PARAMETER, fencing_release(s, "s", 1, NULL)); /* releases nothing */
  NAMES("out_released");
  REFUSED(FENCING_INVALID_UTF8, fencing_release(s, NOT_UTF8[3], 1, &b));
  for (size_t i = 0; i < N_BAD_TOKENS; i++) {
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_release(s, "s", BAD_TOKENS[i], &b));
  }
  UNTOUCHED(b);
}

static void bad_writes(void) {
  fencing_receipt r;
  fencing_fence f2 = {.token = 2}; /* newer: a write that went through would raise the fence */
  fencing_fence f;
  const uint8_t *v = (const uint8_t *)"new";
  uint8_t *huge = malloc(FENCING_MAX_VALUE_BYTES + 1);
  REQUIRE(huge != NULL);
  memset(huge, 'x', FENCING_MAX_VALUE_BYTES + 1);
  POISON(r);

  REFUSED(FENCING_NULL_PARAMETER, fencing_put(NULL, "s", "k", v, 3, &f2, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_put(s, NULL, "k", v, 3, &f2, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_put(s, "s", NULL, v, 3, &f2, &r));
  NAMES("key");
  REFUSED(FENCING_NULL_PARAMETER, fencing_put(s, "s", "k", NULL, 3, &f2, &r));
  NAMES("value");
  REFUSED(FENCING_NULL_PARAMETER, fencing_put(s, "s", "k", v, 3, NULL, &r));
  NAMES("fence");
  /* A NULL out_receipt is allowed (api.c::test_receipts_are_optional); a
   * refused write with none still writes nothing. */
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "", v, 3, &f2, NULL));
  /* A zero-initialised fence: the message names the field to set. */
  f = (fencing_fence){0};
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", v, 3, &f, &r));
  CHECK(strstr(last_message(), "token 0 means none: did you set fence.token?") != NULL);
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "", v, 3, &f2, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", long_key, v, 3, &f2, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "", "k", v, 3, &f2, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, long_scope, "k", v, 3, &f2, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", huge, FENCING_MAX_VALUE_BYTES + 1, &f2, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", huge, SIZE_MAX, &f2, &r));
  for (size_t i = 0; i < N_NOT_UTF8; i++) {
    REFUSED(FENCING_INVALID_UTF8, fencing_put(s, "s", NOT_UTF8[i], v, 3, &f2, &r));
    REFUSED(FENCING_INVALID_UTF8, fencing_put(s, NOT_UTF8[i], "k", v, 3, &f2, &r));
    f = f2;
    f.holder = NOT_UTF8[i];
    REFUSED(FENCING_INVALID_UTF8, fencing_put(s, "s", "k", v, 3, &f, &r));
    NAMES("holder");
  }
  for (size_t i = 0; i < N_BAD_TOKENS; i++) {
    f = f2;
    f.token = BAD_TOKENS[i];
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", v, 3, &f, &r));
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_delete(s, "s", "k", &f, &r));
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_claim(s, "s", &f));
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "other", "k", v, 3, &f, &r));
  }
  f = f2;
  f.has_seq = true;
  f.seq = (uint64_t)FENCING_MAX_TOKEN + 1;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", v, 3, &f, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_claim(s, "s", &f));
  f = f2;
  f.holder = "";
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", v, 3, &f, &r));
  f.holder = long_holder;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_put(s, "s", "k", v, 3, &f, &r));

  REFUSED(FENCING_NULL_PARAMETER, fencing_delete(NULL, "s", "k", &f2, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_delete(s, NULL, "k", &f2, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_delete(s, "s", NULL, &f2, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_delete(s, "s", "k", NULL, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_delete(s, "s", "", &f2, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_delete(s, "s", "", &f2, &r));
  REFUSED(FENCING_INVALID_UTF8, fencing_delete(s, "s", NOT_UTF8[0], &f2, &r));

  /* execute: one op and its condition */
  fencing_op op = {.kind = FENCING_OP_PUT, .key = "k", .value = v, .value_len = 3};
  fencing_op bad = op;
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(NULL, "s", &f2, &op, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(s, NULL, &f2, &op, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(s, "s", NULL, &op, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(s, "s", &f2, NULL, &r));
  NAMES("op");
  bad.kind = 0;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_execute(s, "s", &f2, &bad, &r));
  bad.kind = 3;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_execute(s, "s", &f2, &bad, &r));
  bad = op;
  bad.key = NULL;
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(s, "s", &f2, &bad, &r));
  NAMES("op.key");
  bad = op;
  bad.value = NULL;
  REFUSED(FENCING_NULL_PARAMETER, fencing_execute(s, "s", &f2, &bad, &r));
  bad = op;
  bad.key = NOT_UTF8[4];
  REFUSED(FENCING_INVALID_UTF8, fencing_execute(s, "s", &f2, &bad, &r));
  bad = op;
  bad.has_expected_version = true;
  bad.expected_version = (uint64_t)FENCING_MAX_TOKEN + 1;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_execute(s, "s", &f2, &bad, &r));
  UNTOUCHED(r);

  /* apply: every op is checked before any takes effect */
  fencing_op ops[FENCING_MAX_BATCH_OPS + 1];
  fencing_receipt receipts[FENCING_MAX_BATCH_OPS + 1];
  char keys[FENCING_MAX_BATCH_OPS + 1][8];
  for (size_t i = 0; i < FENCING_MAX_BATCH_OPS + 1; i++) {
    snprintf(keys[i], sizeof keys[i], "b%zu", i);
    ops[i] = op;
    ops[i].key = keys[i];
  }
  POISON(receipts);
  REFUSED(FENCING_NULL_PARAMETER, fencing_apply(NULL, "s", &f2, ops, 2, receipts));
  REFUSED(FENCING_NULL_PARAMETER, fencing_apply(s, NULL, &f2, ops, 2, receipts));
  REFUSED(FENCING_NULL_PARAMETER, fencing_apply(s, "s", NULL, ops, 2, receipts));
  REFUSED(FENCING_NULL_PARAMETER, fencing_apply(s, "s", &f2, NULL, 2, receipts));
  NAMES("ops");
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, FENCING_MAX_BATCH_OPS + 1, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, 0, receipts));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, NULL, 0, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, FENCING_MAX_BATCH_OPS + 1, receipts));
  ops[1].kind = 7;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, 3, receipts));
  ops[1] = op;
  ops[1].key = "";
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, 3, receipts));
  ops[1].key = NOT_UTF8[0];
  REFUSED(FENCING_INVALID_UTF8, fencing_apply(s, "s", &f2, ops, 3, receipts));
  ops[1].key = keys[1];
  ops[1].value = huge;
  ops[1].value_len = FENCING_MAX_VALUE_BYTES + 1;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_apply(s, "s", &f2, ops, 3, receipts));
  CHECK(untouched(receipts, sizeof receipts));
  free(huge);

  REFUSED(FENCING_NULL_PARAMETER, fencing_claim(NULL, "s", &f2));
  REFUSED(FENCING_NULL_PARAMETER, fencing_claim(s, NULL, &f2));
  REFUSED(FENCING_NULL_PARAMETER, fencing_claim(s, "s", NULL));
  REFUSED(FENCING_INVALID_UTF8, fencing_claim(s, NOT_UTF8[1], &f2));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_claim(s, long_scope, &f2));
}

static void bad_reads(void) {
  fencing_entry *e;
  fencing_page *p;
  fencing_scope_info info;
  uint64_t t;
  bool b;
  fencing_fence f0 = {.token = 0};
  POISON(e);
  POISON(p);
  POISON(info);
  POISON(t);
  POISON(b);
  REFUSED(FENCING_NULL_PARAMETER, fencing_get(NULL, "s", "k", NULL, &e));
  REFUSED(FENCING_NULL_PARAMETER, fencing_get(s, NULL, "k", NULL, &e));
  REFUSED(FENCING_NULL_PARAMETER, fencing_get(s, "s", NULL, NULL, &e));
  REFUSED(FENCING_NULL_PARAMETER, fencing_get(s, "s", "k", NULL, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_get(s, "s", "k", &f0, &e));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_get(s, "s", "", NULL, &e));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_get(s, "s", long_key, NULL, &e));
  REFUSED(FENCING_INVALID_UTF8, fencing_get(s, "s", NOT_UTF8[2], NULL, &e));
  UNTOUCHED(e);

  REFUSED(FENCING_NULL_PARAMETER, fencing_list(NULL, "s", NULL, 10, &p));
  REFUSED(FENCING_NULL_PARAMETER, fencing_list(s, NULL, NULL, 10, &p));
  REFUSED(FENCING_NULL_PARAMETER, fencing_list(s, "s", NULL, 10, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_list(s, "s", NULL, 0, &p));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_list(s, "s", NULL, FENCING_MAX_LIST_LIMIT + 1, &p));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_list(s, "s", NULL, SIZE_MAX, &p));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_list(s, "s", "", 10, &p));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_list(s, "s", long_key, 10, &p));
  REFUSED(FENCING_INVALID_UTF8, fencing_list(s, "s", NOT_UTF8[3], 10, &p));
  NAMES("after");
  UNTOUCHED(p);

  REFUSED(FENCING_NULL_PARAMETER, fencing_fence_of(NULL, "s", &t));
  REFUSED(FENCING_NULL_PARAMETER, fencing_fence_of(s, NULL, &t));
  REFUSED(FENCING_NULL_PARAMETER, fencing_fence_of(s, "s", NULL));
  REFUSED(FENCING_INVALID_UTF8, fencing_fence_of(s, NOT_UTF8[0], &t));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_fence_of(s, "", &t));
  REFUSED(FENCING_NULL_PARAMETER, fencing_scope_status(NULL, "s", &info));
  REFUSED(FENCING_NULL_PARAMETER, fencing_scope_status(s, NULL, &info));
  REFUSED(FENCING_NULL_PARAMETER, fencing_scope_status(s, "s", NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_scope_status(s, long_scope, &info));
  REFUSED(FENCING_NULL_PARAMETER, fencing_retire(NULL, "r", &b));
  REFUSED(FENCING_NULL_PARAMETER, fencing_retire(s, NULL, &b));
  REFUSED(FENCING_NULL_PARAMETER, fencing_retire(s, "r", NULL)); /* retires nothing */
  REFUSED(FENCING_INVALID_UTF8, fencing_retire(s, NOT_UTF8[4], &b));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_retire(s, "", &b));
  UNTOUCHED(t);
  UNTOUCHED(info);
  UNTOUCHED(b);
}

static void bad_misc(void) {
  fencing_metrics m;
  fencing_rejection_list *l;
  fencing_rejection rej;
  char *text;
  char buf[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n;
  uint64_t v;
  POISON(m);
  POISON(l);
  POISON(text);
  POISON(n);
  POISON(v);
  POISON(rej);
  REFUSED(FENCING_NULL_PARAMETER, fencing_store_close(NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_advance_clock(NULL, 1));
  REFUSED(FENCING_NULL_PARAMETER, fencing_ping(NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_metrics_snapshot(NULL, &m));
  REFUSED(FENCING_NULL_PARAMETER, fencing_metrics_snapshot(s, NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_rejections(NULL, &l));
  REFUSED(FENCING_NULL_PARAMETER, fencing_rejections(s, NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_metrics_text(NULL, &text));
  REFUSED(FENCING_NULL_PARAMETER, fencing_metrics_text(s, NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_store_location(NULL, &text));
  REFUSED(FENCING_NULL_PARAMETER, fencing_store_location(s, NULL));
  REFUSED(FENCING_NULL_PARAMETER, fencing_rejection_list_get(NULL, 0, &rej));
  REFUSED(FENCING_NULL_PARAMETER, fencing_token_parse(NULL, &v));
  REFUSED(FENCING_NULL_PARAMETER, fencing_token_parse("1", NULL));
  for (size_t i = 0; i < N_NOT_UTF8; i++) {
    REFUSED(FENCING_INVALID_UTF8, fencing_token_parse(NOT_UTF8[i], &v));
  }
  REFUSED(FENCING_NULL_PARAMETER, fencing_token_format(1, NULL, sizeof buf, &n));
  REFUSED(FENCING_NULL_PARAMETER, fencing_token_format(1, buf, sizeof buf, NULL));
  REFUSED(FENCING_BUFFER_TOO_SMALL, fencing_token_format(1, buf, 0, &n));
  UNTOUCHED(m);
  UNTOUCHED(l);
  UNTOUCHED(text);
  UNTOUCHED(n);
  UNTOUCHED(v);
  UNTOUCHED(rej);

  /* The last-error readers refuse NULL without replacing the last error. */
  CHECK_STATUS(FENCING_BUFFER_TOO_SMALL, fencing_token_format(1, buf, 0, &n));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_last_error(NULL));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_last_error_message(NULL, 10, &n));
  CHECK_STATUS(FENCING_NULL_PARAMETER, fencing_last_error_message(buf, sizeof buf, NULL));
  CHECK_STATUS(FENCING_BUFFER_TOO_SMALL, fencing_last_error_message(buf, 3, &n));
  fencing_error e;
  CHECK_OK(fencing_last_error(&e));
  CHECK(e.status == FENCING_BUFFER_TOO_SMALL);

  /* Frees take NULL; accessors of NULL give their defaults. */
  fencing_store_free(NULL);
  fencing_entry_free(NULL);
  fencing_page_free(NULL);
  fencing_rejection_list_free(NULL);
  fencing_string_free(NULL);
  CHECK(fencing_entry_value(NULL) == NULL);
  CHECK(fencing_entry_value_len(NULL) == 0);
  CHECK(fencing_entry_version(NULL) == 0);
  CHECK(fencing_entry_token(NULL) == 0);
  CHECK(fencing_page_len(NULL) == 0);
  CHECK(fencing_page_key(NULL, 0) == NULL);
  CHECK(fencing_page_next(NULL) == NULL);
  CHECK(fencing_rejection_list_len(NULL) == 0);
  REQUIRE(fencing_rejections(s, &l) == FENCING_OK);
  REFUSED(FENCING_NULL_PARAMETER, fencing_rejection_list_get(l, 0, NULL));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_rejection_list_get(l, SIZE_MAX, &rej));
  fencing_rejection_list_free(l);
}

int main(int argc, char **argv) {
  char dir[] = "/tmp/fencing-c-bad-XXXXXX";
  char url[128], side[160];
  if (argc != 2 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "sqlite") != 0)) {
    fprintf(stderr, "usage: %s memory|sqlite\n", argv[0]);
    return 2;
  }
  REQUIRE(mkdtemp(dir) != NULL);
  if (strcmp(argv[1], "sqlite") == 0) {
    snprintf(url, sizeof url, "sqlite:%s/store.db", dir);
  } else {
    snprintf(url, sizeof url, "memory:");
  }
  setup(url);
  bad_urls(dir);
  bad_counter();
  bad_leases();
  bad_writes();
  bad_reads();
  bad_misc();
  /* The store still works, and holds exactly what setup put there. */
  state end = snapshot();
  CHECK_U64(end.fence, 1);
  CHECK(end.k_found && end.k_version == 1 && end.k_len == 1 && end.k_value[0] == 'v');
  CHECK(end.scope.has_lease && end.scope.lease.token == 1);
  CHECK_U64(end.retirable.counter, 1);
  CHECK(!end.other.has_lease && end.other.counter == 0);
  CHECK_U64(end.metrics.writes_accepted, 1);
  CHECK_U64(end.metrics.tokens_issued, 2);
  fencing_store_free(s);
  snprintf(side, sizeof side, "%s/store.db", dir);
  remove_store(side);
  rmdir(dir);
  printf("bad input on %s: ", argv[1]);
  return check_summary();
}
