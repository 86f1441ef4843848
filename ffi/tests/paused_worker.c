/* The paused-worker story with real processes on one SQLite file.
 *
 * A forked child (worker A) acquires the lease and tells the parent its
 * token. The parent stops the child with SIGSTOP, waits (acquire_wait) until
 * A's lease has expired, acquires as worker B, and writes. It then hands the
 * child "go" and continues it with SIGCONT: the child's write with its old
 * token is rejected with FENCING_STALE_TOKEN (presented A, current B), its
 * renew with LEASE_LOST naming B, and B's state stays as B wrote it.
 *
 * Bounded in time: alarm() in both processes; the child dies with the
 * parent (PR_SET_PDEATHSIG), and the parent kills the child on any failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

#define SCOPE "report"
#define KEY "body"
#define TTL_MS 1000
#define LIMIT_S 120

static pid_t child = -1;

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "paused_worker: time limit reached, killing the child\n";
  if (child > 0) {
    kill(child, SIGKILL);
  }
  if (write(STDERR_FILENO, msg, sizeof msg - 1) < 0) {
    _exit(3);
  }
  _exit(3);
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

static bool write_full(int fd, const void *buf, size_t n) {
  return write(fd, buf, n) == (ssize_t)n;
}

/* Worker A. Its exit status is the number of its failed checks (0: all
 * held), or 100+ when it could not run. */
static int worker_a(const char *url, int to_parent, int from_parent) {
  fencing_store *s = NULL;
  fencing_lease lease;
  fencing_receipt r = {0, 0};
  fencing_entry *e = NULL;
  fencing_error err;
  fencing_metrics m;
  uint64_t newer = 0;

  prctl(PR_SET_PDEATHSIG, SIGKILL);
  alarm(LIMIT_S);
  if (fencing_store_open(url, &s) != FENCING_OK ||
      fencing_acquire(s, SCOPE, "worker-a", TTL_MS, &lease) != FENCING_OK) {
    fprintf(stderr, "worker A: %s\n", last_message());
    return 100;
  }
  if (!write_full(to_parent, &lease.token, sizeof lease.token)) {
    return 101;
  }
  /* ... the parent stops us here, past the lease's expiry ... */
  if (!read_full(from_parent, &newer, sizeof newer)) {
    return 102;
  }
  /* Awake again, still believing we hold the lease: write. */
  fencing_fence fence = {.token = lease.token, .holder = "worker-a"};
  const char *mine = "A's stale report";
  CHECK_STATUS(FENCING_STALE_TOKEN,
               fencing_put(s, SCOPE, KEY, (const uint8_t *)mine, strlen(mine), &fence, &r));
  CHECK(r.version == 0 && r.token == 0); /* not written on failure */
  CHECK_OK(fencing_last_error(&err));
  CHECK(err.status == FENCING_STALE_TOKEN);
  CHECK_STR(err.scope, SCOPE);
  CHECK_U64(err.presented, lease.token);
  CHECK_U64(err.current, newer);
  /* Retrying with the same token can never succeed. */
  CHECK_STATUS(FENCING_STALE_TOKEN,
               fencing_put(s, SCOPE, KEY, (const uint8_t *)mine, strlen(mine), &fence, &r));
  CHECK_STATUS(FENCING_STALE_TOKEN, fencing_claim(s, SCOPE, &fence));
  /* The keep-alive would learn it too: the lease is B's now. */
  CHECK_STATUS(FENCING_LEASE_LOST, fencing_renew(s, SCOPE, lease.token, TTL_MS, &lease));
  CHECK_OK(fencing_last_error(&err));
  CHECK_U64(err.current_token, newer);
  CHECK_STR(err.current_holder, "worker-b");
  /* B's report is there, untouched. */
  CHECK_OK(fencing_get(s, SCOPE, KEY, NULL, &e));
  CHECK(e != NULL && fencing_entry_value_len(e) == strlen("B's report") &&
        memcmp(fencing_entry_value(e), "B's report", strlen("B's report")) == 0 &&
        fencing_entry_token(e) == newer);
  fencing_entry_free(e);
  CHECK_OK(fencing_metrics_snapshot(s, &m));
  CHECK_U64(m.stale_rejections, 3);
  CHECK_U64(m.writes_accepted, 0);
  fencing_store_free(s);
  printf("worker A: ");
  fflush(stdout);
  check_summary();
  fflush(stdout);
  return checks_failed;
}

static void remove_files(const char *dir) {
  char path[256];
  snprintf(path, sizeof path, "%s/story.db", dir);
  remove_store(path);
  rmdir(dir);
}

int main(void) {
  char dir[] = "/tmp/fencing-c-paused-XXXXXX";
  char url[128];
  int up[2], down[2], status = 0;
  uint64_t a_token = 0;
  fencing_store *s = NULL;
  fencing_lease b;
  fencing_receipt r;
  fencing_scope_info info;
  fencing_entry *e = NULL;

  REQUIRE(mkdtemp(dir) != NULL);
  snprintf(url, sizeof url, "sqlite:%s/story.db", dir);
  REQUIRE(pipe(up) == 0 && pipe(down) == 0);
  signal(SIGALRM, on_alarm);
  alarm(LIMIT_S);
  fflush(stdout);
  child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    _exit(worker_a(url, up[1], down[0]));
  }
  close(up[1]);
  close(down[0]);

  /* Worker A holds the lease: stop it, as a GC pause or a VM suspend would. */
  REQUIRE(read_full(up[0], &a_token, sizeof a_token));
  REQUIRE(kill(child, SIGSTOP) == 0);
  REQUIRE(waitpid(child, &status, WUNTRACED) == child && WIFSTOPPED(status));

  REQUIRE(fencing_store_open(url, &s) == FENCING_OK);
  CHECK_OK(fencing_scope_status(s, SCOPE, &info));
  CHECK_U64(info.counter, a_token);
  CHECK_U64(info.fence, a_token); /* eager fencing */
  if (info.has_lease) {           /* still live unless this took a whole TTL */
    CHECK_STR(info.lease.holder, "worker-a");
    CHECK_U64(info.lease.token, a_token);
  }
  /* Worker B waits for A's lease to expire (A is stopped: it cannot renew). */
  CHECK_OK(fencing_acquire_wait(s, SCOPE, "worker-b", 60000, 60000, &b));
  CHECK_U64(b.token, a_token + 1);
  fencing_fence fence = {.token = b.token, .holder = "worker-b"};
  CHECK_OK(fencing_put(s, SCOPE, KEY, (const uint8_t *)"B's report", strlen("B's report"), &fence, &r));
  CHECK_U64(r.version, 1);
  /* A is still stopped: nothing of this depended on A noticing anything. */
  CHECK(waitpid(child, &status, WNOHANG) == 0);

  /* Wake A up. */
  REQUIRE(write_full(down[1], &b.token, sizeof b.token));
  REQUIRE(kill(child, SIGCONT) == 0);
  REQUIRE(waitpid(child, &status, 0) == child);
  child = -1;
  if (!CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
    fprintf(stderr, "worker A exited with status %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  }

  /* B's state stayed: same value, version, token; the fence is B's. */
  CHECK_OK(fencing_get(s, SCOPE, KEY, NULL, &e));
  CHECK(e != NULL && fencing_entry_version(e) == 1 && fencing_entry_token(e) == b.token &&
        fencing_entry_value_len(e) == strlen("B's report") &&
        memcmp(fencing_entry_value(e), "B's report", strlen("B's report")) == 0);
  fencing_entry_free(e);
  uint64_t fence_now = 0;
  CHECK_OK(fencing_fence_of(s, SCOPE, &fence_now));
  CHECK_U64(fence_now, b.token);
  CHECK_OK(fencing_scope_status(s, SCOPE, &info));
  CHECK(info.has_lease && info.lease.token == b.token);
  CHECK_STR(info.lease.holder, "worker-b");
  fencing_store_free(s);
  close(up[0]);
  close(down[1]);
  remove_files(dir);
  printf("paused worker: ");
  return check_summary();
}
