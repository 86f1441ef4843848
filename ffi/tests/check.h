/* A tiny check harness shared by the C tests: counts checks, prints each
 * failure with its line, and ends with "N passed, M failed". */
#ifndef FENCING_TEST_CHECK_H
#define FENCING_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fencing.h"
#include "store_files.h"

#ifdef _WIN32
#include <direct.h>
/* mingw-w64 has no mkdtemp (scripts/windows-test builds these tests for
 * Windows): _mktemp_s fills in the XXXXXX, _mkdir makes the directory. */
static inline char *mkdtemp(char *template_) {
  if (_mktemp_s(template_, strlen(template_) + 1) != 0 || _mkdir(template_) != 0) {
    return NULL;
  }
  return template_;
}
#endif

static int checks_passed;
static int checks_failed;

static inline int check_(int ok, const char *what, const char *file, int line) {
  if (ok) {
    checks_passed++;
  } else {
    checks_failed++;
    fprintf(stderr, "%s:%d: check failed: %s\n", file, line, what);
  }
  return ok;
}

#define CHECK(cond) check_(!!(cond), #cond, __FILE__, __LINE__)

/* The message of the calling thread's last failure ("" when none). */
static inline const char *last_message(void) {
  fencing_error e;
  if (fencing_last_error(&e) != FENCING_OK) {
    return "(fencing_last_error failed)";
  }
  return e.message;
}

static inline int check_status_(fencing_status got, fencing_status want, const char *call,
                         const char *file, int line) {
  if (got == want) {
    checks_passed++;
    return 1;
  }
  checks_failed++;
  fprintf(stderr, "%s:%d: %s returned %s, expected %s (%s)\n", file, line, call,
          fencing_status_name(got), fencing_status_name(want),
          got == FENCING_OK ? "" : last_message());
  return 0;
}

/* Runs `call`, checks it returned `want`. */
#define CHECK_STATUS(want, call) check_status_((call), (want), #call, __FILE__, __LINE__)
#define CHECK_OK(call) CHECK_STATUS(FENCING_OK, call)

#define CHECK_U64(got, want)                                                              \
  do {                                                                                    \
    uint64_t got_ = (got), want_ = (want);                                                \
    if (got_ == want_) {                                                                  \
      checks_passed++;                                                                    \
    } else {                                                                              \
      checks_failed++;                                                                    \
      fprintf(stderr, "%s:%d: %s is %" PRIu64 ", expected %" PRIu64 "\n", __FILE__,       \
              __LINE__, #got, got_, want_);                                               \
    }                                                                                     \
  } while (0)

#define CHECK_STR(got, want)                                                              \
  do {                                                                                    \
    const char *got_ = (got), *want_ = (want);                                            \
    if (got_ != NULL && want_ != NULL && strcmp(got_, want_) == 0) {                      \
      checks_passed++;                                                                    \
    } else {                                                                              \
      checks_failed++;                                                                    \
      fprintf(stderr, "%s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__, __LINE__, #got, \
              got_ ? got_ : "(null)", want_ ? want_ : "(null)");                          \
    }                                                                                     \
  } while (0)

/* Prints the summary line and returns the exit code. */
static inline int check_summary(void) {
  printf("%d passed, %d failed\n", checks_passed, checks_failed);
  return checks_failed == 0 ? 0 : 1;
}

/* Aborts the test program: for setup that the checks cannot go on without. */
#define REQUIRE(cond)                                                                  \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      fprintf(stderr, "%s:%d: required: %s (%s)\n", __FILE__, __LINE__, #cond,         \
              last_message());                                                         \
      exit(2);                                                                         \
    }                                                                                  \
  } while (0)

#endif
