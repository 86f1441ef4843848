/* Replays every shared scenario file (tests/scenarios, every .json file) through the C
 * ABI, on one backend: `scenarios memory DIR`, `scenarios sqlite DIR` (a fresh
 * database file per scenario) or `scenarios etcd DIR` (a fresh key prefix per
 * scenario on the cluster of FENCING_TEST_ETCD_CLUSTER, HOST:PORT,...;
 * skipped, exit 0, without it unless FENCING_REQUIRE_ETCD=1). The object_*
 * steps run on one `memory:` objects handle per scenario, opened by the first
 * of them.
 *
 * It follows the Rust runner (tests/runner/src/lib.rs): the same argument
 * decoding, result rendering and subset comparison. Token-domain text is
 * parsed by fencing_token_parse and printed by fencing_token_format, so the
 * binding's own parser decides what is canonical. Two kinds of argument
 * cannot be expressed through the C API at all and become INVALID_ARGUMENT
 * here, exactly as the Rust runner does for what Rust's types cannot hold:
 * a JSON number where decimal text is required, a negative or fractional
 * duration or limit, and (C strings end at their first NUL) a name with a
 * NUL inside. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fencing.h"
#include "store_files.h"

/* ----- per-step allocations, freed after each step ----- */

static void **allocs;
static size_t allocs_len, allocs_cap;

static void *step_alloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) {
    abort();
  }
  if (allocs_len == allocs_cap) {
    allocs_cap = allocs_cap ? allocs_cap * 2 : 64;
    allocs = realloc(allocs, allocs_cap * sizeof *allocs);
    if (allocs == NULL) {
      abort();
    }
  }
  allocs[allocs_len++] = p;
  return p;
}

static void step_free_all(void) {
  for (size_t i = 0; i < allocs_len; i++) {
    free(allocs[i]);
  }
  allocs_len = 0;
}

/* ----- outcomes ----- */

/* A malformed scenario file: the runner's failure, not the step's. */
static char malformed[512];

typedef enum { DECODE_OK, DECODE_INVALID, DECODE_MALFORMED } decode;

static decode bad_file(const char *fmt, const char *name) {
  snprintf(malformed, sizeof malformed, fmt, name);
  return DECODE_MALFORMED;
}

typedef struct {
  bool ok;
  json_t *value; /* the result (ok) or the rendered error */
} outcome;

static const char *last_message(void) {
  fencing_error e;
  return fencing_last_error(&e) == FENCING_OK ? e.message : "?";
}

static json_t *text_of_token(uint64_t v) {
  char buf[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n = 0;
  if (fencing_token_format(v, buf, sizeof buf, &n) != FENCING_OK) {
    return json_string("(fencing_token_format failed)");
  }
  return json_stringn(buf, n);
}

static json_t *text_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* The error of the call that just failed, as the scenario files spell it. */
static json_t *render_error(fencing_status status) {
  fencing_error e;
  json_t *v = json_object();
  if (fencing_last_error(&e) != FENCING_OK || e.status != status) {
    json_object_set_new(v, "code", json_string("(last error does not match the status)"));
    return v;
  }
  json_object_set_new(v, "code", json_string(fencing_status_name(status)));
  switch (status) {
  case FENCING_STALE_TOKEN:
    json_object_set_new(v, "scope", text_or_null(e.scope));
    json_object_set_new(v, "presented", text_of_token(e.presented));
    json_object_set_new(v, "current", text_of_token(e.current));
    break;
  case FENCING_SEQUENCE_OUT_OF_ORDER:
    json_object_set_new(v, "presented", text_of_token(e.presented));
    json_object_set_new(v, "last", text_of_token(e.last));
    break;
  case FENCING_VERSION_MISMATCH:
    json_object_set_new(v, "expected", text_of_token(e.expected));
    json_object_set_new(v, "actual", text_of_token(e.actual));
    break;
  case FENCING_NOT_FOUND:
    json_object_set_new(v, "scope", text_or_null(e.scope));
    json_object_set_new(v, "key", text_or_null(e.key));
    break;
  case FENCING_LEASE_HELD:
    json_object_set_new(v, "holder", text_or_null(e.holder));
    json_object_set_new(v, "token", text_of_token(e.token));
    json_object_set_new(v, "remaining_ms", json_integer((json_int_t)e.remaining_ms));
    break;
  case FENCING_LEASE_LOST:
    json_object_set_new(v, "current_token",
                        e.current_token ? text_of_token(e.current_token) : json_null());
    json_object_set_new(v, "current_holder", text_or_null(e.current_holder));
    break;
  case FENCING_BACKEND:
    json_object_set_new(v, "kind", text_or_null(e.kind));
    break;
  default:
    break;
  }
  return v;
}

static outcome success(json_t *v) { return (outcome){true, v}; }

static outcome failure(fencing_status status) { return (outcome){false, render_error(status)}; }

/* INVALID_ARGUMENT decided by the runner (see the file comment). */
static outcome invalid(void) {
  json_t *v = json_object();
  json_object_set_new(v, "code", json_string("INVALID_ARGUMENT"));
  return (outcome){false, v};
}

/* ----- argument decoding (tests/runner/src/lib.rs, `Args`) ----- */

typedef struct {
  const char *ptr;
  size_t len;
} text;

/* A string field: literal text or {"repeat": "ab", "count": 3}. */
static bool text_value(json_t *v, text *out) {
  if (json_is_string(v)) {
    out->ptr = json_string_value(v);
    out->len = json_string_length(v);
    return true;
  }
  if (json_is_object(v)) {
    json_t *unit = json_object_get(v, "repeat");
    json_t *count = json_object_get(v, "count");
    if (!json_is_string(unit) || !json_is_integer(count) || json_integer_value(count) < 0) {
      return false;
    }
    size_t ulen = json_string_length(unit);
    size_t n = (size_t)json_integer_value(count);
    char *buf = step_alloc(ulen * n + 1);
    for (size_t i = 0; i < n; i++) {
      memcpy(buf + i * ulen, json_string_value(unit), ulen);
    }
    buf[ulen * n] = '\0';
    out->ptr = buf;
    out->len = ulen * n;
    return true;
  }
  return false;
}

/* A name for the C API: NUL-terminated, so a NUL inside cannot be passed. */
static decode c_string(const text *t, const char **out) {
  if (strlen(t->ptr) != t->len) {
    return DECODE_INVALID;
  }
  *out = t->ptr;
  return DECODE_OK;
}

/* A required string argument; missing is a malformed file. */
static decode arg_string(json_t *step, const char *name, const char **out) {
  text t;
  if (!text_value(json_object_get(step, name), &t)) {
    return bad_file("missing string \"%s\"", name);
  }
  return c_string(&t, out);
}

/* An optional string: NULL when absent or null; not a string is invalid. */
static decode arg_optional_string(json_t *step, const char *name, const char **out) {
  json_t *v = json_object_get(step, name);
  text t;
  if (v == NULL || json_is_null(v)) {
    *out = NULL;
    return DECODE_OK;
  }
  if (!text_value(v, &t)) {
    return DECODE_INVALID;
  }
  return c_string(&t, out);
}

/* Decimal text through the binding's parser. */
static decode parse_decimal(json_t *v, uint64_t *out) {
  if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) {
    return DECODE_INVALID;
  }
  return fencing_token_parse(json_string_value(v), out) == FENCING_OK ? DECODE_OK : DECODE_INVALID;
}

/* An optional token-domain number (seq, expected_version). */
static decode arg_decimal(json_t *step, const char *name, bool *present, uint64_t *out) {
  json_t *v = json_object_get(step, name);
  *present = !(v == NULL || json_is_null(v));
  return *present ? parse_decimal(v, out) : DECODE_OK;
}

/* A token: decimal text; "0" parses, and the call refuses it. */
static decode arg_token(json_t *step, const char *name, uint64_t *out) {
  return parse_decimal(json_object_get(step, name), out);
}

/* A non-negative JSON integer (durations, limit). */
static decode arg_optional_u64(json_t *step, const char *name, bool *present, uint64_t *out) {
  json_t *v = json_object_get(step, name);
  *present = !(v == NULL || json_is_null(v));
  if (!*present) {
    return DECODE_OK;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0) {
    return DECODE_INVALID;
  }
  *out = (uint64_t)json_integer_value(v);
  return DECODE_OK;
}

static decode arg_ms(json_t *step, const char *name, uint64_t *out) {
  bool present;
  decode d = arg_optional_u64(step, name, &present, out);
  return d == DECODE_OK && !present ? DECODE_INVALID : d;
}

static decode arg_fence(json_t *step, fencing_fence *f) {
  decode d;
  memset(f, 0, sizeof *f);
  if ((d = arg_token(step, "token", &f->token)) != DECODE_OK) {
    return d;
  }
  if ((d = arg_decimal(step, "seq", &f->has_seq, &f->seq)) != DECODE_OK) {
    return d;
  }
  return arg_optional_string(step, "holder", &f->holder);
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static decode arg_value(json_t *step, const uint8_t **out, size_t *len) {
  text t;
  json_t *hex = json_object_get(step, "value_hex");
  if (text_value(json_object_get(step, "value"), &t)) {
    *out = (const uint8_t *)t.ptr;
    *len = t.len;
    return DECODE_OK;
  }
  if (json_is_string(hex)) {
    const char *h = json_string_value(hex);
    size_t n = json_string_length(hex);
    uint8_t *buf = step_alloc(n / 2 + 1);
    if (n % 2 != 0) {
      return DECODE_INVALID;
    }
    for (size_t i = 0; i < n; i += 2) {
      int hi = hex_digit(h[i]), lo = hex_digit(h[i + 1]);
      if (hi < 0 || lo < 0) {
        return DECODE_INVALID;
      }
      buf[i / 2] = (uint8_t)(hi * 16 + lo);
    }
    *out = buf;
    *len = n / 2;
    return DECODE_OK;
  }
  return DECODE_INVALID;
}

/* A put or delete, with its optional expected_version. */
static decode arg_op(json_t *item, fencing_op *op, bool is_put, const char *key) {
  decode d;
  memset(op, 0, sizeof *op);
  op->kind = is_put ? FENCING_OP_PUT : FENCING_OP_DELETE;
  op->key = key;
  if (is_put && (d = arg_value(item, &op->value, &op->value_len)) != DECODE_OK) {
    return d;
  }
  return arg_decimal(item, "expected_version", &op->has_expected_version, &op->expected_version);
}

static decode arg_ops(json_t *step, fencing_op **out, size_t *len) {
  json_t *list = json_object_get(step, "ops");
  if (!json_is_array(list)) {
    return DECODE_INVALID;
  }
  *len = json_array_size(list);
  *out = step_alloc(*len * sizeof **out);
  for (size_t i = 0; i < *len; i++) {
    json_t *item = json_array_get(list, i);
    text key;
    const char *k = NULL;
    bool is_put;
    decode d;
    if (text_value(json_object_get(item, "put"), &key)) {
      is_put = true;
    } else if (text_value(json_object_get(item, "delete"), &key)) {
      is_put = false;
    } else {
      return DECODE_INVALID;
    }
    if ((d = c_string(&key, &k)) != DECODE_OK || (d = arg_op(item, &(*out)[i], is_put, k)) != DECODE_OK) {
      return d;
    }
  }
  return DECODE_OK;
}

/* ----- rendering results ----- */

static json_t *render_lease(const char *scope, const fencing_lease *l) {
  json_t *v = json_object();
  json_object_set_new(v, "scope", json_string(scope));
  json_object_set_new(v, "holder", json_string(l->holder));
  json_object_set_new(v, "token", text_of_token(l->token));
  json_object_set_new(v, "ttl_ms", json_integer((json_int_t)l->ttl_ms));
  json_object_set_new(v, "remaining_ms", json_integer((json_int_t)l->remaining_ms));
  return v;
}

static json_t *render_receipt(const fencing_receipt *r) {
  json_t *v = json_object();
  json_object_set_new(v, "version", text_of_token(r->version));
  json_object_set_new(v, "token", text_of_token(r->token));
  return v;
}

/* What `get` and `object_get` answer: {found: false}, or the bytes, version
 * and token found. */
static json_t *render_found(bool found, const uint8_t *bytes, size_t len, uint64_t version,
                            uint64_t token) {
  json_t *v = json_object();
  if (!found) {
    json_object_set_new(v, "found", json_false());
    return v;
  }
  char *hex = step_alloc(len * 2 + 1);
  for (size_t i = 0; i < len; i++) {
    snprintf(hex + i * 2, 3, "%02x", bytes[i]);
  }
  hex[len * 2] = '\0';
  json_object_set_new(v, "found", json_true());
  json_object_set_new(v, "value_hex", json_string(hex));
  json_object_set_new(v, "value_len", json_integer((json_int_t)len));
  json_object_set_new(v, "version", text_of_token(version));
  json_object_set_new(v, "token", text_of_token(token));
  /* The text form only when the bytes are UTF-8 (jansson validates). */
  json_t *as_text = json_stringn(len ? (const char *)bytes : "", len);
  if (as_text != NULL) {
    json_object_set_new(v, "value", as_text);
  }
  return v;
}

static json_t *render_entry(const fencing_entry *e) {
  return render_found(e != NULL, fencing_entry_value(e), fencing_entry_value_len(e),
                      fencing_entry_version(e), fencing_entry_token(e));
}

static json_t *render_object(const fencing_object *o) {
  return render_found(o != NULL, fencing_object_value(o), fencing_object_value_len(o),
                      fencing_object_version(o), fencing_object_token(o));
}

static json_t *render_metrics(const fencing_store *store, fencing_status *status) {
  fencing_metrics m;
  fencing_rejection_list *list = NULL;
  if ((*status = fencing_metrics_snapshot(store, &m)) != FENCING_OK ||
      (*status = fencing_rejections(store, &list)) != FENCING_OK) {
    return NULL;
  }
  json_t *v = json_object();
  char buf[32];
#define COUNTER(name)                                      \
  snprintf(buf, sizeof buf, "%" PRIu64, m.name);           \
  json_object_set_new(v, #name, json_string(buf));
  COUNTER(tokens_issued)
  COUNTER(leases_acquired)
  COUNTER(acquire_conflicts)
  COUNTER(renewals)
  COUNTER(renewal_failures)
  COUNTER(releases)
  COUNTER(writes_accepted)
  COUNTER(stale_rejections)
  COUNTER(sequence_rejections)
  COUNTER(version_conflicts)
  COUNTER(pauses_detected)
  COUNTER(longest_pause_ms)
#undef COUNTER
  json_t *items = json_array();
  for (size_t i = 0; i < fencing_rejection_list_len(list); i++) {
    fencing_rejection r;
    if ((*status = fencing_rejection_list_get(list, i, &r)) != FENCING_OK) {
      json_decref(items);
      json_decref(v);
      fencing_rejection_list_free(list);
      return NULL;
    }
    json_t *item = json_object();
    json_object_set_new(item, "code", json_string(fencing_status_name(r.code)));
    json_object_set_new(item, "scope", json_string(r.scope));
    json_object_set_new(item, "key", text_or_null(r.key));
    json_object_set_new(item, "presented", text_of_token(r.presented));
    json_object_set_new(item, "current", text_of_token(r.current));
    json_object_set_new(item, "holder", text_or_null(r.holder));
    json_array_append_new(items, item);
  }
  json_object_set_new(v, "rejections", items);
  fencing_rejection_list_free(list);
  return v;
}

/* ----- one step ----- */

#define DECODE(expr)                                                                   \
  do {                                                                                 \
    decode d_ = (expr);                                                                \
    if (d_ == DECODE_MALFORMED) {                                                      \
      *ok = false;                                                                     \
      return (outcome){false, NULL};                                                   \
    }                                                                                  \
    if (d_ == DECODE_INVALID) {                                                        \
      return invalid();                                                                \
    }                                                                                  \
  } while (0)

#define CALL(expr, result)                                                             \
  do {                                                                                 \
    fencing_status s_ = (expr);                                                        \
    if (s_ != FENCING_OK) {                                                            \
      return failure(s_);                                                              \
    }                                                                                  \
    return success(result);                                                            \
  } while (0)

/* Runs one step. `*ok` turns false when the file itself is malformed. */
/* ----- holds: `hold` keeps a lease alive until the scope's `finish` ----- */

#define MAX_HOLDS 16
static struct {
  char *scope;
  fencing_hold *hold;
} holds[MAX_HOLDS];

static fencing_hold **hold_slot(const char *scope) {
  for (size_t i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].scope != NULL && strcmp(holds[i].scope, scope) == 0) {
      return &holds[i].hold;
    }
  }
  return NULL;
}

static bool hold_put(const char *scope, fencing_hold *hold) {
  for (size_t i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].scope == NULL) {
      holds[i].scope = strdup(scope);
      holds[i].hold = hold;
      return holds[i].scope != NULL;
    }
  }
  return false;
}

static fencing_hold *hold_take(const char *scope) {
  for (size_t i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].scope != NULL && strcmp(holds[i].scope, scope) == 0) {
      fencing_hold *hold = holds[i].hold;
      free(holds[i].scope);
      holds[i].scope = NULL;
      holds[i].hold = NULL;
      return hold;
    }
  }
  return NULL;
}

/* At the end of a file: holds no `finish` ended are freed (released). */
static void holds_free_all(void) {
  for (size_t i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].scope != NULL) {
      fencing_hold_free(hold_take(holds[i].scope));
    }
  }
}

/* `finish`: the verdict is FENCING_OK ({released: true}) or the loss, with
 * `cause: "work"` when the caller's own error goes with it. */
static outcome finish(const char *scope, json_t *step, bool *ok) {
  const char *work = json_string_value(json_object_get(step, "work"));
  bool failed = work != NULL && strcmp(work, "failed") == 0;
  if (work == NULL || (!failed && strcmp(work, "ok") != 0)) {
    snprintf(malformed, sizeof malformed, "\"work\" must be \"ok\" or \"failed\"");
    *ok = false;
    return (outcome){false, NULL};
  }
  fencing_hold *hold = hold_take(scope);
  if (hold == NULL) {
    snprintf(malformed, sizeof malformed, "no hold step holds \"%.200s\"", scope);
    *ok = false;
    return (outcome){false, NULL};
  }
  bool attach = true; /* finish must set it */
  fencing_status status = fencing_hold_finish(hold, failed, &attach);
  if (status == FENCING_OK) {
    return success(json_pack("{s:b}", "released", 1));
  }
  outcome o = failure(status);
  json_object_set_new(o.value, "cause", attach ? json_string("work") : json_null());
  return o;
}

/* ----- fenced objects: one `memory:` handle per scenario, opened by its
 * first object_* step (freed by run_file) ----- */

static fencing_objects *objects;

static outcome object_step(const char *op, json_t *step, bool *ok) {
  const char *url = NULL, *path = NULL;
  fencing_fence fence;
  fencing_op one;
  fencing_receipt receipt;
  fencing_status status;

  if (strcmp(op, "object_open") == 0) {
    fencing_objects *other = NULL;
    DECODE(arg_string(step, "url", &url));
    status = fencing_objects_open(url, &other);
    fencing_objects_free(other);
    CALL(status, json_object());
  }
  DECODE(arg_string(step, "path", &path));
  if (objects == NULL && (status = fencing_objects_open("memory:", &objects)) != FENCING_OK) {
    return failure(status);
  }
  if (strcmp(op, "object_put") == 0 || strcmp(op, "object_delete") == 0) {
    bool is_put = strcmp(op, "object_put") == 0;
    DECODE(arg_fence(step, &fence));
    DECODE(arg_op(step, &one, is_put, path));
    status = is_put ? fencing_objects_put(objects, path, one.value, one.value_len, &fence,
                                          one.has_expected_version, one.expected_version, &receipt)
                    : fencing_objects_delete(objects, path, &fence, one.has_expected_version,
                                             one.expected_version, &receipt);
    CALL(status, render_receipt(&receipt));
  }
  if (strcmp(op, "object_get") == 0) {
    fencing_object *object = NULL;
    status = fencing_objects_get(objects, path, &object);
    if (status != FENCING_OK) {
      return failure(status);
    }
    json_t *v = render_object(object);
    fencing_object_free(object);
    return success(v);
  }
  snprintf(malformed, sizeof malformed, "unknown op \"%s\"", op);
  *ok = false;
  return (outcome){false, NULL};
}

static outcome execute(fencing_store *store, json_t *step, bool *ok) {
  const char *op = json_string_value(json_object_get(step, "op"));
  const char *scope = NULL, *holder = NULL, *key = NULL, *url = NULL, *after = NULL;
  uint64_t token = 0, ttl = 0, timeout = 0, ms = 0, limit = 100, out = 0;
  bool flag = false, present = false;
  fencing_lease lease;
  fencing_fence fence;
  fencing_receipt receipt;
  fencing_status status;

  if (op == NULL) {
    snprintf(malformed, sizeof malformed, "step needs an \"op\"");
    *ok = false;
    return (outcome){false, NULL};
  }
  if (strcmp(op, "open") == 0) {
    fencing_store *other = NULL;
    DECODE(arg_string(step, "url", &url));
    status = fencing_store_open(url, &other);
    if (status != FENCING_OK) {
      return failure(status);
    }
    fencing_store_close(other);
    fencing_store_free(other);
    return success(json_object());
  }
  if (strcmp(op, "close") == 0) {
    CALL(fencing_store_close(store), json_object());
  }
  if (strcmp(op, "advance_clock") == 0) {
    DECODE(arg_ms(step, "ms", &ms));
    CALL(fencing_advance_clock(store, ms), json_object());
  }
  if (strcmp(op, "metrics") == 0) {
    json_t *v = render_metrics(store, &status);
    return v ? success(v) : failure(status);
  }
  if (strncmp(op, "object_", 7) == 0) {
    return object_step(op, step, ok);
  }
  DECODE(arg_string(step, "scope", &scope));

  if (strcmp(op, "hold") == 0) {
    fencing_hold *hold = NULL;
    DECODE(arg_string(step, "holder", &holder));
    DECODE(arg_ms(step, "ttl_ms", &ttl));
    if (hold_slot(scope) != NULL) {
      snprintf(malformed, sizeof malformed, "\"%.200s\" is already held by a hold step", scope);
      *ok = false;
      return (outcome){false, NULL};
    }
    status = fencing_hold_start(store, scope, holder, ttl, 0, NULL, NULL, &hold);
    if (status != FENCING_OK) {
      return failure(status);
    }
    status = fencing_hold_lease(hold, &lease);
    if (status != FENCING_OK || !hold_put(scope, hold)) {
      fencing_hold_free(hold);
      return failure(status);
    }
    return success(render_lease(scope, &lease));
  }
  if (strcmp(op, "finish") == 0) {
    return finish(scope, step, ok);
  }
  if (strcmp(op, "next_token") == 0) {
    status = fencing_next_token(store, scope, &out);
    CALL(status, json_pack("{s:o}", "token", text_of_token(out)));
  }
  if (strcmp(op, "advance_counter") == 0) {
    DECODE(arg_token(step, "floor", &token));
    status = fencing_advance_counter(store, scope, token, &out);
    CALL(status, json_pack("{s:o}", "counter", text_of_token(out)));
  }
  if (strcmp(op, "acquire") == 0 || strcmp(op, "acquire_wait") == 0) {
    DECODE(arg_string(step, "holder", &holder));
    DECODE(arg_ms(step, "ttl_ms", &ttl));
    if (strcmp(op, "acquire") == 0) {
      status = fencing_acquire(store, scope, holder, ttl, &lease);
    } else {
      DECODE(arg_ms(step, "timeout_ms", &timeout));
      status = fencing_acquire_wait(store, scope, holder, ttl, timeout, &lease);
    }
    CALL(status, render_lease(scope, &lease));
  }
  if (strcmp(op, "renew") == 0) {
    DECODE(arg_token(step, "token", &token));
    DECODE(arg_ms(step, "ttl_ms", &ttl));
    status = fencing_renew(store, scope, token, ttl, &lease);
    CALL(status, render_lease(scope, &lease));
  }
  if (strcmp(op, "release") == 0) {
    DECODE(arg_token(step, "token", &token));
    status = fencing_release(store, scope, token, &flag);
    CALL(status, json_pack("{s:b}", "released", flag));
  }
  if (strcmp(op, "put") == 0 || strcmp(op, "delete") == 0) {
    bool is_put = strcmp(op, "put") == 0;
    fencing_op one;
    DECODE(arg_string(step, "key", &key));
    DECODE(arg_fence(step, &fence));
    DECODE(arg_op(step, &one, is_put, key));
    if (one.has_expected_version) {
      status = fencing_execute(store, scope, &fence, &one, &receipt);
    } else if (is_put) {
      status = fencing_put(store, scope, key, one.value, one.value_len, &fence, &receipt);
    } else {
      status = fencing_delete(store, scope, key, &fence, &receipt);
    }
    CALL(status, render_receipt(&receipt));
  }
  if (strcmp(op, "apply") == 0) {
    fencing_op *ops = NULL;
    size_t n = 0;
    DECODE(arg_fence(step, &fence));
    DECODE(arg_ops(step, &ops, &n));
    fencing_receipt *receipts = step_alloc(n * sizeof *receipts);
    status = fencing_apply(store, scope, &fence, ops, n, receipts);
    if (status != FENCING_OK) {
      return failure(status);
    }
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
      json_array_append_new(list, render_receipt(&receipts[i]));
    }
    return success(json_pack("{s:o}", "receipts", list));
  }
  if (strcmp(op, "claim") == 0) {
    DECODE(arg_fence(step, &fence));
    CALL(fencing_claim(store, scope, &fence), json_object());
  }
  if (strcmp(op, "get") == 0) {
    json_t *t = NULL;
    fencing_entry *entry = NULL;
    DECODE(arg_string(step, "key", &key));
    t = json_object_get(step, "token");
    if (t != NULL && !json_is_null(t)) {
      DECODE(arg_fence(step, &fence));
    }
    status = fencing_get(store, scope, key, (t != NULL && !json_is_null(t)) ? &fence : NULL, &entry);
    if (status != FENCING_OK) {
      return failure(status);
    }
    json_t *v = render_entry(entry);
    fencing_entry_free(entry);
    return success(v);
  }
  if (strcmp(op, "list") == 0) {
    fencing_page *page = NULL;
    DECODE(arg_optional_string(step, "after", &after));
    DECODE(arg_optional_u64(step, "limit", &present, &limit));
    if (!present) {
      limit = 100;
    }
    status = fencing_list(store, scope, after, (size_t)limit, &page);
    if (status != FENCING_OK) {
      return failure(status);
    }
    json_t *keys = json_array();
    for (size_t i = 0; i < fencing_page_len(page); i++) {
      json_array_append_new(keys, json_string(fencing_page_key(page, i)));
    }
    json_t *v = json_pack("{s:o,s:o}", "keys", keys, "next", text_or_null(fencing_page_next(page)));
    fencing_page_free(page);
    return success(v);
  }
  if (strcmp(op, "fence_of") == 0) {
    status = fencing_fence_of(store, scope, &out);
    CALL(status, json_pack("{s:o}", "fence", text_of_token(out)));
  }
  if (strcmp(op, "status") == 0) {
    fencing_scope_info info;
    status = fencing_scope_status(store, scope, &info);
    if (status != FENCING_OK) {
      return failure(status);
    }
    json_t *v = json_object();
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, info.entries);
    json_object_set_new(v, "counter", text_of_token(info.counter));
    json_object_set_new(v, "fence", text_of_token(info.fence));
    json_object_set_new(v, "lease", info.has_lease ? render_lease(scope, &info.lease) : json_null());
    json_object_set_new(v, "entries", json_string(buf));
    return success(v);
  }
  if (strcmp(op, "retire") == 0) {
    status = fencing_retire(store, scope, &flag);
    CALL(status, json_pack("{s:b}", "retired", flag));
  }
  snprintf(malformed, sizeof malformed, "unknown op \"%s\"", op);
  *ok = false;
  return (outcome){false, NULL};
}

/* ----- comparison (tests/runner/src/lib.rs, `subset`) ----- */

/* Puts "name: " in front of the explanation, naming where it went wrong. */
static void prefix(char *why, size_t why_len, const char *name) {
  char inner[1024];
  snprintf(inner, sizeof inner, "%s", why);
  snprintf(why, why_len, "%s: %s", name, inner);
}

static bool subset(json_t *want, json_t *got, char *why, size_t why_len) {
  if (json_is_object(want) && json_is_object(got)) {
    const char *k;
    json_t *wv;
    json_object_foreach(want, k, wv) {
      json_t *gv = json_object_get(got, k);
      if (gv == NULL) {
        if (json_is_null(wv)) {
          continue;
        }
        snprintf(why, why_len, "%s: missing", k);
        return false;
      }
      if (!subset(wv, gv, why, why_len)) {
        prefix(why, why_len, k);
        return false;
      }
    }
    return true;
  }
  if (json_is_array(want) && json_is_array(got) && json_array_size(want) == json_array_size(got)) {
    for (size_t i = 0; i < json_array_size(want); i++) {
      if (!subset(json_array_get(want, i), json_array_get(got, i), why, why_len)) {
        char index[32];
        snprintf(index, sizeof index, "[%zu]", i);
        prefix(why, why_len, index);
        return false;
      }
    }
    return true;
  }
  if (json_equal(want, got)) {
    return true;
  }
  char *w = json_dumps(want, JSON_ENCODE_ANY | JSON_COMPACT);
  char *g = json_dumps(got, JSON_ENCODE_ANY | JSON_COMPACT);
  snprintf(why, why_len, "expected %s, got %s", w ? w : "?", g ? g : "?");
  free(w);
  free(g);
  return false;
}

/* Runs one step and compares; returns false (with `why`) on a mismatch. */
static bool run_step(fencing_store *store, json_t *step, char *why, size_t why_len) {
  bool ok = true;
  json_t *want_error = json_object_get(step, "error");
  json_t *want = json_object_get(step, "expect");
  outcome o = execute(store, step, &ok);
  bool pass;
  if (!ok) {
    snprintf(why, why_len, "malformed step: %s", malformed);
    pass = false;
  } else if (want_error != NULL && !o.ok) {
    pass = subset(want_error, o.value, why, why_len);
  } else if (want_error != NULL) {
    snprintf(why, why_len, "expected an error, got success");
    pass = false;
  } else if (!o.ok) {
    char *e = json_dumps(o.value, JSON_COMPACT);
    snprintf(why, why_len, "unexpected error %s (%s)", e ? e : "?", last_message());
    free(e);
    pass = false;
  } else {
    pass = want == NULL || subset(want, o.value, why, why_len);
  }
  json_decref(o.value);
  step_free_all();
  return pass;
}

/* ----- files ----- */

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Store options as the URL query: {"clock": "manual", "strict": true}. */
static bool options_query(json_t *doc, char *query, size_t len) {
  json_t *options = json_object_get(doc, "options");
  const char *k;
  json_t *v;
  query[0] = '\0';
  if (options == NULL) {
    return true;
  }
  if (!json_is_object(options)) {
    return false;
  }
  json_object_foreach(options, k, v) {
    const char *value = json_is_string(v) ? json_string_value(v)
                        : json_is_true(v) ? "true"
                        : json_is_false(v) ? "false"
                                           : NULL;
    size_t used = strlen(query);
    if (value == NULL) {
      return false;
    }
    snprintf(query + used, len - used, "%s%s=%s", used ? "&" : "", k, value);
  }
  return true;
}

/* Replays one file; returns whether every step passed. `etcd` is
 * `etcd://MEMBERS/RUN` (backend etcd): the scenario's key prefix is RUN_INDEX. */
static bool run_file(const char *dir, const char *name, const char *backend, const char *tmpdir,
                     const char *etcd, int index) {
  char path[4096], url[8192], db[4096], query[512], why[2048];
  json_error_t jerr;
  fencing_store *store = NULL;
  bool pass = true;

  snprintf(path, sizeof path, "%s/%s", dir, name);
  json_t *doc = json_load_file(path, JSON_ALLOW_NUL, &jerr);
  json_t *steps = doc ? json_object_get(doc, "steps") : NULL;
  if (doc == NULL || !json_is_array(steps) || !options_query(doc, query, sizeof query)) {
    fprintf(stderr, "FAIL %s [%s]: cannot read the scenario (%s)\n", name, backend,
            doc ? "bad steps or options" : jerr.text);
    json_decref(doc);
    return false;
  }
  if (strcmp(backend, "sqlite") == 0) {
    snprintf(db, sizeof db, "%s/%d.db", tmpdir, index);
    snprintf(url, sizeof url, "sqlite:%s%s%s", db, query[0] ? "?" : "", query);
  } else if (strcmp(backend, "etcd") == 0) {
    snprintf(url, sizeof url, "%s_%d%s%s", etcd, index, query[0] ? "?" : "", query);
  } else {
    snprintf(url, sizeof url, "memory:%s%s", query[0] ? "?" : "", query);
  }
  if (fencing_store_open(url, &store) != FENCING_OK) {
    fprintf(stderr, "FAIL %s [%s]: open %s: %s\n", name, backend, url, last_message());
    json_decref(doc);
    return false;
  }
  for (size_t i = 0; i < json_array_size(steps); i++) {
    json_t *step = json_array_get(steps, i);
    why[0] = '\0';
    if (!run_step(store, step, why, sizeof why)) {
      char *text = json_dumps(step, JSON_COMPACT);
      fprintf(stderr, "FAIL %s [%s] step %zu %.300s: %s\n", name, backend, i + 1,
              text ? text : "?", why);
      free(text);
      pass = false;
      break;
    }
  }
  holds_free_all();
  fencing_objects_free(objects);
  objects = NULL;
  fencing_store_close(store);
  fencing_store_free(store);
  if (strcmp(backend, "sqlite") == 0) {
    remove_store(db);
  }
  json_decref(doc);
  return pass;
}

int main(int argc, char **argv) {
  if (argc != 3 || (strcmp(argv[1], "memory") != 0 && strcmp(argv[1], "sqlite") != 0 &&
                    strcmp(argv[1], "etcd") != 0)) {
    fprintf(stderr, "usage: %s memory|sqlite|etcd SCENARIO_DIR\n", argv[0]);
    return 2;
  }
  const char *backend = argv[1], *dir = argv[2];
  char etcd[4096] = "";
  if (strcmp(backend, "etcd") == 0) {
    const char *members = getenv("FENCING_TEST_ETCD_CLUSTER");
    if (members == NULL || members[0] == '\0') {
      const char *require = getenv("FENCING_REQUIRE_ETCD");
      if (require != NULL && strcmp(require, "1") == 0) {
        fprintf(stderr, "FENCING_REQUIRE_ETCD=1 but FENCING_TEST_ETCD_CLUSTER is not set\n");
        return 1;
      }
      printf("skipped: no etcd (run under scripts/etcd-cluster run)\n"
             "scenarios on etcd: 0 passed, 0 failed\n");
      return 0;
    }
    /* A key prefix no earlier run used: runs share one cluster and delete nothing. */
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(etcd, sizeof etcd, "etcd://%s/t_c_scn_%ld_%lld%09ld", members, (long)getpid(),
             (long long)now.tv_sec, (long)now.tv_nsec);
  }
  char tmpdir[] = "/tmp/fencing-c-scenarios-XXXXXX";
  char **names = NULL;
  size_t count = 0, cap = 0;
  int passed = 0, failed = 0;
  DIR *d = opendir(dir);
  struct dirent *ent;

  if (d == NULL) {
    fprintf(stderr, "%s: %s\n", dir, strerror(errno));
    return 2;
  }
  while ((ent = readdir(d)) != NULL) {
    size_t n = strlen(ent->d_name);
    if (n > 5 && strcmp(ent->d_name + n - 5, ".json") == 0) {
      if (count == cap) {
        cap = cap ? cap * 2 : 64;
        names = realloc(names, cap * sizeof *names);
      }
      names[count++] = strdup(ent->d_name);
    }
  }
  closedir(d);
  qsort(names, count, sizeof *names, by_name);
  if (mkdtemp(tmpdir) == NULL) {
    fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
    return 2;
  }
  for (size_t i = 0; i < count; i++) {
    if (run_file(dir, names[i], backend, tmpdir, etcd, (int)i)) {
      passed++;
    } else {
      failed++;
    }
    free(names[i]);
  }
  free(names);
  free(allocs);
  rmdir(tmpdir);
  if (count < 30) {
    fprintf(stderr, "expected at least 30 scenarios in %s, found %zu\n", dir, count);
    failed++;
  }
  printf("scenarios on %s: %d passed, %d failed\n", backend, passed, failed);
  return failed == 0 ? 0 : 1;
}
