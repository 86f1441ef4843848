/* The paused-worker story, with two real processes sharing one SQLite file.
 *
 *   worker A acquires the lease        token 1
 *   worker A pauses ......................... (the lease expires)
 *   worker B acquires the lease        token 2
 *   worker B writes the report         with 2   accepted, fence = 2
 *   worker A wakes and writes          with 1   REJECTED: STALE_TOKEN (1 < 2)
 *
 * The pause is real: the parent (worker B) stops the child (worker A) with
 * SIGSTOP and continues it with SIGCONT. A does not notice that it is stale;
 * the store notices for it.
 *
 *   make -C examples/c && ./examples/c/paused_worker [DB_FILE]
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fencing.h>

#define SCOPE "report:7"
#define TTL_MS 500

static void die(const char *what) {
  fencing_error e;
  fencing_last_error(&e);
  fprintf(stderr, "%s: %s: %s\n", what, fencing_status_name(e.status), e.message);
  exit(1);
}

/* Worker A: acquire, then (after the pause) write with the token it holds. */
static int worker_a(const char *url, int to_b, int from_b) {
  fencing_store *store;
  fencing_lease lease;
  fencing_receipt receipt;
  char go;

  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (fencing_store_open(url, &store) != FENCING_OK) die("A: open");
  if (fencing_acquire(store, SCOPE, "worker-a", TTL_MS, &lease) != FENCING_OK) die("A: acquire");
  printf("worker A acquires the lease        token %llu\n", (unsigned long long)lease.token);
  fflush(stdout);
  if (write(to_b, &lease.token, sizeof lease.token) != sizeof lease.token) return 1;
  if (read(from_b, &go, 1) != 1) return 1; /* (stopped here by B) */

  /* Every protected write carries the token. */
  fencing_fence fence = {.token = lease.token, .holder = "worker-a"};
  const char *report = "A's report";
  fencing_status st = fencing_put(store, SCOPE, "body", (const uint8_t *)report,
                                  strlen(report), &fence, &receipt);
  if (st == FENCING_STALE_TOKEN) {
    fencing_error e;
    fencing_last_error(&e);
    printf("worker A wakes and writes          with %llu   REJECTED: STALE_TOKEN (%llu < %llu)\n",
           (unsigned long long)e.presented, (unsigned long long)e.presented,
           (unsigned long long)e.current);
  } else {
    printf("worker A's stale write was not rejected: %s\n", fencing_status_name(st));
  }
  fflush(stdout);
  fencing_store_free(store);
  return st == FENCING_STALE_TOKEN ? 0 : 1;
}

int main(int argc, char **argv) {
  char path[] = "/tmp/fencing-example-XXXXXX";
  char url[4200];
  int a_to_b[2], b_to_a[2], status;
  uint64_t a_token;
  bool own_file = argc < 2;

  if (own_file) {
    int fd = mkstemp(path);
    if (fd < 0) return 1;
    close(fd);
    unlink(path);
  }
  snprintf(url, sizeof url, "sqlite:%s", own_file ? path : argv[1]);
  if (pipe(a_to_b) != 0 || pipe(b_to_a) != 0) return 1;
  fflush(stdout);
  pid_t a = fork();
  if (a < 0) return 1;
  if (a == 0) _exit(worker_a(url, a_to_b[1], b_to_a[0]));

  /* Worker B. A holds the lease; A pauses (here: we stop it). */
  if (read(a_to_b[0], &a_token, sizeof a_token) != sizeof a_token) return 1;
  kill(a, SIGSTOP);
  waitpid(a, &status, WUNTRACED);
  printf("worker A pauses ......................... (the lease expires)\n");

  fencing_store *store;
  fencing_lease lease;
  fencing_receipt receipt;
  if (fencing_store_open(url, &store) != FENCING_OK) die("B: open");
  /* Blocks until A's lease has expired (A cannot renew while stopped). */
  if (fencing_acquire_wait(store, SCOPE, "worker-b", 30000, 10000, &lease) != FENCING_OK) {
    kill(a, SIGKILL);
    die("B: acquire_wait");
  }
  printf("worker B acquires the lease        token %llu\n", (unsigned long long)lease.token);
  fencing_fence fence = {.token = lease.token, .holder = "worker-b"};
  const char *report = "B's report";
  if (fencing_put(store, SCOPE, "body", (const uint8_t *)report, strlen(report), &fence,
                  &receipt) != FENCING_OK) {
    kill(a, SIGKILL);
    die("B: put");
  }
  printf("worker B writes the report         with %llu   accepted, fence = %llu\n",
         (unsigned long long)lease.token, (unsigned long long)lease.token);
  fflush(stdout);

  /* A wakes up. */
  if (write(b_to_a[1], "g", 1) != 1) return 1;
  kill(a, SIGCONT);
  waitpid(a, &status, 0);

  /* B's report is still there. */
  fencing_entry *entry = NULL;
  if (fencing_get(store, SCOPE, "body", NULL, &entry) != FENCING_OK || entry == NULL) die("B: get");
  printf("the report reads \"%.*s\" (version %llu, written with token %llu)\n",
         (int)fencing_entry_value_len(entry), (const char *)fencing_entry_value(entry),
         (unsigned long long)fencing_entry_version(entry),
         (unsigned long long)fencing_entry_token(entry));
  bool intact = fencing_entry_token(entry) == lease.token;
  fencing_entry_free(entry);
  fencing_release(store, SCOPE, lease.token, &(bool){false});
  fencing_store_free(store);
  if (own_file) { /* the store, its WAL files and its sidecar (/tmp/.NAME-fencing) */
    char side[64];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    snprintf(side, sizeof side, "/tmp/.%s-fencing", path + strlen("/tmp/"));
    unlink(side);
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 && intact ? 0 : 1;
}
