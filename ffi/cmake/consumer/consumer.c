/* The smallest real use of libfencing: a lease, a fenced write, and a stale
 * write refused, on each store URL given (default "memory:"; a "sqlite:PATH"
 * also runs the bundled SQLite compiled for the consumer's target).
 * Exit status 0 only if every step did what the contract says. */
#include <fencing.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static int check(const char *url) {
  fencing_store *s = NULL;
  fencing_lease a, b;
  fencing_receipt r;
  bool released = false;
  if (fencing_store_open(url, &s) != FENCING_OK) return 2;
  if (fencing_acquire(s, "report", "a", 1000, &a) != FENCING_OK) return 3;
  if (fencing_release(s, "report", a.token, &released) != FENCING_OK || !released) return 4;
  if (fencing_acquire(s, "report", "b", 1000, &b) != FENCING_OK) return 5;
  fencing_fence fb = {.token = b.token};
  if (fencing_put(s, "report", "body", (const uint8_t *)"b", 1, &fb, &r) != FENCING_OK) return 6;
  fencing_fence fa = {.token = a.token};
  if (fencing_put(s, "report", "body", (const uint8_t *)"a", 1, &fa, &r) != FENCING_STALE_TOKEN) return 7;
  fencing_store_free(s);
  printf("C consumer: libfencing %s on %s, stale token %llu refused after %llu\n", fencing_version(), url,
         (unsigned long long)a.token, (unsigned long long)b.token);
  return 0;
}

int main(int argc, char **argv) {
  if (strcmp(fencing_version(), FENCING_VERSION) != 0) return 1;
  if (argc < 2) return check("memory:");
  for (int i = 1; i < argc; i++) {
    int rc = check(argv[i]);
    if (rc != 0) {
      fprintf(stderr, "C consumer: %s: step %d failed\n", argv[i], rc);
      return rc;
    }
  }
  return 0;
}
