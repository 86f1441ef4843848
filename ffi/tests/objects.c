/* Fenced objects through the C ABI (fencing_objects_*, docs/objects.md).
 *
 *   objects file   in a fresh temporary directory (file:///DIR): the stale
 *                  holder (two handles, as two workers have), a missing
 *                  path, delete then get, conditions and seqs, and every bad
 *                  argument refused with its status, its out-parameters
 *                  untouched and nothing changed on disk
 *   objects s3     the stale holder on the S3 server of
 *                  FENCING_TEST_S3_BUCKET, under a fresh prefix
 *                  (scripts/s3-server run); skipped, exit 0, without it
 *                  unless FENCING_REQUIRE_S3=1
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

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

static const uint8_t *bytes(const char *s) { return (const uint8_t *)s; }

/* The object at `path` is `want` (NULL: there is none), written with
 * `token` at `version`. */
static void check_object_(const fencing_objects *o, const char *path, const char *want,
                          uint64_t token, uint64_t version, int line) {
  fencing_object *got;
  POISON(got);
  if (!check_status_(fencing_objects_get(o, path, &got), FENCING_OK, "fencing_objects_get",
                     __FILE__, line)) {
    return;
  }
  if (want == NULL) {
    check_(got == NULL, "no object", __FILE__, line);
    fencing_object_free(got);
    return;
  }
  if (!check_(got != NULL, "an object", __FILE__, line)) {
    return;
  }
  size_t n = fencing_object_value_len(got);
  check_(n == strlen(want) && memcmp(fencing_object_value(got), want, n) == 0,
         "the object's bytes", __FILE__, line);
  check_(fencing_object_token(got) == token, "the object's token", __FILE__, line);
  check_(fencing_object_version(got) == version, "the object's version", __FILE__, line);
  fencing_object_free(got);
}
#define CHECK_OBJECT(o, path, want, token, version) \
  check_object_((o), (path), (want), (token), (version), __LINE__)

/* The last error is `status` with these details. */
static void check_error_(fencing_status status, const char *scope, uint64_t presented,
                         uint64_t current, int line) {
  fencing_error e;
  check_(fencing_last_error(&e) == FENCING_OK && e.status == status, "the last error's status",
         __FILE__, line);
  check_(e.scope != NULL && strcmp(e.scope, scope) == 0, "the last error's scope", __FILE__,
         line);
  check_(e.presented == presented, "the last error's presented", __FILE__, line);
  check_(e.current == current, "the last error's current", __FILE__, line);
}

/* The paused worker, with objects: B (token 2) writes, A (token 1) wakes
 * and writes on its own handle and is refused with the path's fence; both
 * read B's bytes. */
static void stale_holder(const char *url) {
  fencing_objects *a = NULL, *b = NULL;
  fencing_fence one = {.token = 1, .holder = "worker-a"}, two = {.token = 2, .holder = "worker-b"};
  fencing_receipt r;
  REQUIRE(fencing_objects_open(url, &a) == FENCING_OK);
  REQUIRE(fencing_objects_open(url, &b) == FENCING_OK);
  CHECK_OBJECT(a, "reports/7.csv", NULL, 0, 0);
  CHECK_OK(fencing_objects_put(b, "reports/7.csv", bytes("b,2\n"), 4, &two, false, 0, &r));
  CHECK_U64(r.version, 1);
  CHECK_U64(r.token, 2);
  POISON(r);
  CHECK_STATUS(FENCING_STALE_TOKEN,
               fencing_objects_put(a, "reports/7.csv", bytes("a,1\n"), 4, &one, false, 0, &r));
  check_error_(FENCING_STALE_TOKEN, "reports/7.csv", 1, 2, __LINE__);
  UNTOUCHED(r);
  CHECK_OBJECT(a, "reports/7.csv", "b,2\n", 2, 1);
  CHECK_OBJECT(b, "reports/7.csv", "b,2\n", 2, 1);
  fencing_objects_free(a);
  fencing_objects_free(b);
}

/* What get, delete, conditions and seqs answer, on one handle. */
static void contract(const char *url) {
  fencing_objects *o = NULL;
  fencing_fence one = {.token = 1}, two = {.token = 2};
  fencing_receipt r;
  fencing_error e;
  REQUIRE(fencing_objects_open(url, &o) == FENCING_OK);

  CHECK_OBJECT(o, "never/written", NULL, 0, 0);

  /* Delete then get: gone, and the path keeps its fence. */
  CHECK_OK(fencing_objects_put(o, "d", bytes("x"), 1, &two, false, 0, NULL)); /* no receipt wanted */
  CHECK_OBJECT(o, "d", "x", 2, 1);
  CHECK_OK(fencing_objects_delete(o, "d", &two, false, 0, &r));
  CHECK_U64(r.version, 0);
  CHECK_U64(r.token, 2);
  CHECK_OBJECT(o, "d", NULL, 0, 0);
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_objects_delete(o, "d", &two, false, 0, &r));
  CHECK_OK(fencing_last_error(&e));
  CHECK_STR(e.scope, "d");
  CHECK_STR(e.key, "d");
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_objects_put(o, "d", bytes("late"), 4, &one, false, 0, &r));
  check_error_(FENCING_STALE_TOKEN, "d", 1, 2, __LINE__);
  CHECK_STATUS(FENCING_NOT_FOUND, fencing_objects_delete(o, "never/written", &one, false, 0, NULL));
  /* Versions never restart: the delete was version 2. */
  CHECK_OK(fencing_objects_put(o, "d", bytes("again"), 5, &two, false, 0, &r));
  CHECK_U64(r.version, 3);
  CHECK_OBJECT(o, "d", "again", 2, 3);

  /* Conditions: VERSION_MISMATCH with expected and actual; 0 is "must not exist". */
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_objects_put(o, "d", bytes("v"), 1, &two, true, 2, &r));
  CHECK_OK(fencing_last_error(&e));
  CHECK_U64(e.expected, 2);
  CHECK_U64(e.actual, 3);
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_objects_put(o, "d", bytes("v"), 1, &two, true, 0, &r));
  CHECK_STATUS(FENCING_VERSION_MISMATCH, fencing_objects_delete(o, "d", &two, true, 1, &r));
  CHECK_OBJECT(o, "d", "again", 2, 3);
  CHECK_OK(fencing_objects_put(o, "c", NULL, 0, &two, true, 0, &r)); /* empty bytes, NULL allowed */
  CHECK_U64(r.version, 1);
  CHECK_OBJECT(o, "c", "", 2, 1);
  CHECK_OK(fencing_objects_delete(o, "c", &two, true, 1, &r));
  CHECK_U64(r.version, 0);

  /* Seqs, as the fenced store checks them: after the last one for this token. */
  fencing_fence seq = {.token = 3, .seq = 5, .has_seq = true};
  CHECK_OK(fencing_objects_put(o, "s", bytes("5"), 1, &seq, false, 0, &r));
  CHECK_STATUS(FENCING_SEQUENCE_OUT_OF_ORDER, fencing_objects_put(o, "s", bytes("5"), 1, &seq, false, 0, &r));
  CHECK_OK(fencing_last_error(&e));
  CHECK_U64(e.presented, 5);
  CHECK_U64(e.last, 5);
  seq.seq = 6;
  CHECK_OK(fencing_objects_put(o, "s", bytes("6"), 1, &seq, false, 0, &r));
  CHECK_OBJECT(o, "s", "6", 3, 2);

  /* Bytes are bytes: NULs inside, the largest token. */
  const uint8_t bin[] = {0, 1, 0, 2};
  fencing_fence max = {.token = FENCING_MAX_TOKEN};
  fencing_object *got = NULL;
  CHECK_OK(fencing_objects_put(o, "bin", bin, sizeof bin, &max, false, 0, &r));
  CHECK_U64(r.token, FENCING_MAX_TOKEN);
  CHECK_OK(fencing_objects_get(o, "bin", &got));
  CHECK(got != NULL && fencing_object_value_len(got) == sizeof bin &&
        memcmp(fencing_object_value(got), bin, sizeof bin) == 0);
  CHECK_U64(fencing_object_token(got), FENCING_MAX_TOKEN);
  fencing_object_free(got);
  fencing_objects_free(o);
}

/* ----- bad input: refused, out-parameters untouched, nothing changed ----- */

static char tree_buf[65536];
static size_t tree_len;

static int tree_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  (void)type;
  (void)ftw;
  tree_len += (size_t)snprintf(tree_buf + tree_len, sizeof tree_buf - tree_len, "%s %lld\n",
                               path, (long long)sb->st_size);
  return tree_len >= sizeof tree_buf;
}

/* Every file and directory under `dir`, with its size. */
static char *tree(const char *dir) {
  tree_len = 0;
  tree_buf[0] = '\0';
  REQUIRE(nftw(dir, tree_entry, 16, FTW_PHYS) == 0);
  return strdup(tree_buf);
}

static const char *tree_dir;

static int refused_(fencing_status got, fencing_status want, const char *call, const char *before,
                    int line) {
  fencing_error e;
  char *after = tree(tree_dir);
  int ok = check_status_(got, want, call, __FILE__, line);
  ok &= check_(fencing_last_error(&e) == FENCING_OK && e.status == want && e.message[0] != '\0',
               "the last error tells the status and a message", __FILE__, line);
  ok &= check_(strcmp(before, after) == 0, "nothing changed on disk", __FILE__, line);
  free(after);
  return ok;
}

/* The call returns `want`, sets the last error, and changes no file. */
#define REFUSED(want, call)                                        \
  do {                                                             \
    char *before_ = tree(tree_dir);                                \
    refused_((call), (want), #call, before_, __LINE__);            \
    free(before_);                                                 \
  } while (0)

/* The last error names the parameter. */
#define NAMES(param) CHECK(strstr(last_message(), param) != NULL)

static void bad_input(const char *dir, const char *url) {
  static const char *bad_urls[] = {
      "", "memory", "memory:?x=1", "redis://localhost", "file://relative/dir", "file:relative",
      "file://localhost/tmp", "sqlite:x.db", "s3://", "s3://Not_A_Bucket", " memory:",
  };
  static const char *bad_paths[] = {
      "", "/abs", "a//b", "a/./b", "a/../b", "..", "a/", "a.fenced/b", "b.fenced", "a#b", "a*b",
  };
  static const char *not_utf8[] = {"\xff", "ab\xc3", "\xc0\x80", "\xed\xa0\x80"};
  static const uint64_t bad_tokens[] = {0, (uint64_t)FENCING_MAX_TOKEN + 1, UINT64_MAX};
  fencing_objects *o = NULL, *out;
  fencing_object *got;
  fencing_receipt r;
  fencing_fence ok = {.token = 5}, f;
  char text[4200];
  tree_dir = dir;

  REQUIRE(fencing_objects_open(url, &o) == FENCING_OK);
  REQUIRE(fencing_objects_put(o, "p", bytes("kept"), 4, &ok, false, 0, NULL) == FENCING_OK);
  /* The comparison sees a write. */
  char *before = tree(dir);
  REQUIRE(fencing_objects_put(o, "q", bytes("q"), 1, &ok, false, 0, NULL) == FENCING_OK);
  char *after = tree(dir);
  CHECK(strcmp(before, after) != 0);
  free(before);
  free(after);

  for (size_t i = 0; i < sizeof bad_urls / sizeof *bad_urls; i++) {
    POISON(out);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_open(bad_urls[i], &out));
    UNTOUCHED(out);
  }
  snprintf(text, sizeof text, "file://%s/missing-dir", dir);
  POISON(out);
  REFUSED(FENCING_BACKEND, fencing_objects_open(text, &out));
  UNTOUCHED(out);
  fencing_error e;
  CHECK_OK(fencing_last_error(&e));
  CHECK_STR(e.kind, "unreachable");
  for (size_t i = 0; i < sizeof not_utf8 / sizeof *not_utf8; i++) {
    snprintf(text, sizeof text, "file://%s/%s", dir, not_utf8[i]);
    REFUSED(FENCING_INVALID_UTF8, fencing_objects_open(text, &out));
    NAMES("url");
  }
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_open(NULL, &out));
  NAMES("url");
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_open(url, NULL));
  NAMES("out");

  for (size_t i = 0; i < sizeof bad_paths / sizeof *bad_paths; i++) {
    const char *p = bad_paths[i];
    POISON(r);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_put(o, p, bytes("x"), 1, &ok, false, 0, &r));
    UNTOUCHED(r);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_delete(o, p, &ok, false, 0, &r));
    UNTOUCHED(r);
    POISON(got);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_get(o, p, &got));
    UNTOUCHED(got);
  }
  memset(text, 'k', FENCING_MAX_KEY_BYTES + 1); /* over 1,024 bytes */
  text[FENCING_MAX_KEY_BYTES + 1] = '\0';
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_put(o, text, bytes("x"), 1, &ok, false, 0, &r));
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_get(o, text, &got));
  for (size_t i = 0; i < sizeof not_utf8 / sizeof *not_utf8; i++) {
    REFUSED(FENCING_INVALID_UTF8, fencing_objects_put(o, not_utf8[i], bytes("x"), 1, &ok, false, 0, &r));
    NAMES("path");
    REFUSED(FENCING_INVALID_UTF8, fencing_objects_delete(o, not_utf8[i], &ok, false, 0, &r));
    REFUSED(FENCING_INVALID_UTF8, fencing_objects_get(o, not_utf8[i], &got));
    f = ok;
    f.holder = not_utf8[i];
    REFUSED(FENCING_INVALID_UTF8, fencing_objects_put(o, "p", bytes("x"), 1, &f, false, 0, &r));
    NAMES("fence.holder");
  }

  /* Tokens 0, 2^63 and -1 (as C passes it), in puts and deletes. */
  for (size_t i = 0; i < sizeof bad_tokens / sizeof *bad_tokens; i++) {
    f = ok;
    f.token = bad_tokens[i];
    POISON(r);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_put(o, "p", bytes("x"), 1, &f, false, 0, &r));
    UNTOUCHED(r);
    REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_delete(o, "p", &f, false, 0, &r));
    UNTOUCHED(r);
  }
  f = ok;
  f.has_seq = true;
  f.seq = (uint64_t)FENCING_MAX_TOKEN + 1;
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_put(o, "p", bytes("x"), 1, &f, false, 0, &r));
  f = ok;
  f.holder = "";
  REFUSED(FENCING_INVALID_ARGUMENT, fencing_objects_put(o, "p", bytes("x"), 1, &f, false, 0, &r));

  /* NULL for every pointer that must not be. */
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_put(NULL, "p", bytes("x"), 1, &ok, false, 0, &r));
  NAMES("objects");
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_put(o, NULL, bytes("x"), 1, &ok, false, 0, &r));
  NAMES("path");
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_put(o, "p", NULL, 1, &ok, false, 0, &r));
  NAMES("value");
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_put(o, "p", bytes("x"), 1, NULL, false, 0, &r));
  NAMES("fence");
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_delete(NULL, "p", &ok, false, 0, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_delete(o, NULL, &ok, false, 0, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_delete(o, "p", NULL, false, 0, &r));
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_get(NULL, "p", &got));
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_get(o, NULL, &got));
  REFUSED(FENCING_NULL_PARAMETER, fencing_objects_get(o, "p", NULL));
  NAMES("out_object");

  /* The accessors and frees take NULL. */
  CHECK(fencing_object_value(NULL) == NULL);
  CHECK_U64(fencing_object_value_len(NULL), 0);
  CHECK_U64(fencing_object_version(NULL), 0);
  CHECK_U64(fencing_object_token(NULL), 0);
  fencing_object_free(NULL);
  fencing_objects_free(NULL);

  CHECK_OBJECT(o, "p", "kept", 5, 1);
  fencing_objects_free(o);
}

static int remove_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw) {
  (void)sb;
  (void)type;
  (void)ftw;
  return remove(path);
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  char url[4096];
  if (strcmp(mode, "file") == 0) {
    char dir[] = "/tmp/fencing-c-objects.XXXXXX", sub[64];
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(url, sizeof url, "file://%s", dir);
    stale_holder(url);
    /* Each part in its own directory: bad_input compares what is on disk. */
    snprintf(sub, sizeof sub, "%s/contract", dir);
    snprintf(url, sizeof url, "file://%s", sub);
    REQUIRE(mkdir(sub, 0700) == 0);
    contract(url);
    snprintf(sub, sizeof sub, "%s/bad", dir);
    snprintf(url, sizeof url, "file://%s", sub);
    REQUIRE(mkdir(sub, 0700) == 0);
    bad_input(sub, url);
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
  } else if (strcmp(mode, "s3") == 0 || strcmp(mode, "az") == 0) {
    /* Each cloud: the variable its server's script sets (the bucket or
     * container) and the one that makes a missing server a failure. */
    const int s3 = strcmp(mode, "s3") == 0;
    const char *var = s3 ? "FENCING_TEST_S3_BUCKET" : "FENCING_TEST_AZ_CONTAINER";
    const char *required = s3 ? "FENCING_REQUIRE_S3" : "FENCING_REQUIRE_AZ";
    const char *name = getenv(var);
    if (name == NULL || name[0] == '\0') {
      const char *require = getenv(required);
      if (require != NULL && strcmp(require, "1") == 0) {
        fprintf(stderr, "%s=1 but %s is not set\n", required, var);
        return 1;
      }
      printf("skipped: no %s:// server (run under scripts/%s run)\n0 passed, 0 failed\n", mode,
             s3 ? "s3-server" : "azure-server");
      return 0;
    }
    /* A prefix no other run used: runs share the bucket (container). */
    snprintf(url, sizeof url, "%s://%s/c-%ld-%ld", mode, name, (long)getpid(), (long)time(NULL));
    stale_holder(url);
  } else {
    fprintf(stderr, "usage: %s file|s3|az\n", argv[0]);
    return 2;
  }
  return check_summary();
}
