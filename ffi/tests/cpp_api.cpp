// A C++17 translation unit: the header (included twice) declares everything
// extern "C", and the calls link and work from C++.
#include "fencing.h"
#include "fencing.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

static_assert(FENCING_OK == 0, "FENCING_OK is 0");

namespace {

struct StoreFree {
  void operator()(fencing_store *s) const { fencing_store_free(s); }
};
using Store = std::unique_ptr<fencing_store, StoreFree>;

int failures = 0;
int passes = 0;

void check(bool ok, const char *what) {
  if (ok) {
    passes++;
  } else {
    failures++;
    std::fprintf(stderr, "check failed: %s\n", what);
  }
}

}  // namespace

int main() {
  check(std::string(fencing_version()) == FENCING_VERSION, "version");
  fencing_store *raw = nullptr;
  check(fencing_store_open("memory:?clock=manual", &raw) == FENCING_OK, "open");
  Store store(raw);

  fencing_lease a{};
  check(fencing_acquire(store.get(), "report", "worker-a", 1000, &a) == FENCING_OK, "acquire A");
  check(fencing_advance_clock(store.get(), 1001) == FENCING_OK, "advance clock");
  fencing_lease b{};
  check(fencing_acquire(store.get(), "report", "worker-b", 1000, &b) == FENCING_OK, "acquire B");

  fencing_fence fb{};
  fb.token = b.token;
  fencing_receipt r{};
  const std::string body = "B's report";
  check(fencing_put(store.get(), "report", "body", reinterpret_cast<const uint8_t *>(body.data()),
                    body.size(), &fb, &r) == FENCING_OK,
        "B writes");

  fencing_fence fa{};
  fa.token = a.token;
  fencing_status st = fencing_put(store.get(), "report", "body",
                                  reinterpret_cast<const uint8_t *>("A"), 1, &fa, &r);
  check(st == FENCING_STALE_TOKEN, "A is stale");
  fencing_error e{};
  check(fencing_last_error(&e) == FENCING_OK && e.presented == a.token && e.current == b.token,
        "details");
  check(std::strcmp(fencing_status_name(st), "STALE_TOKEN") == 0, "status name");

  // A watch on the lease, from C++: B's lease as it is, then nothing new.
  struct WatchFree {
    void operator()(fencing_watch *w) const { fencing_watch_free(w); }
  };
  fencing_watch *raw_watch = nullptr;
  check(fencing_watch_open(store.get(), "report", &raw_watch) == FENCING_OK, "watch open");
  std::unique_ptr<fencing_watch, WatchFree> watch(raw_watch);
  fencing_holding h{};
  bool changed = false;
  check(fencing_watch_next(watch.get(), 60000, &h, &changed) == FENCING_OK && changed && h.has_lease &&
            h.lease.token == b.token && std::string(h.lease.holder) == "worker-b" &&
            std::string(h.scope) == "report",
        "watch: the lease as it is");
  check(fencing_watch_next(watch.get(), 10, &h, &changed) == FENCING_OK && !changed, "watch: nothing new");
  check(fencing_watch_open(store.get(), "\xff", &raw_watch) == FENCING_INVALID_UTF8, "watch: bad scope");

  char text[FENCING_TOKEN_TEXT_CAPACITY];
  size_t n = 0;
  check(fencing_token_format(FENCING_MAX_TOKEN, text, sizeof text, &n) == FENCING_OK &&
            std::string(text, n) == "9223372036854775807",
        "token text");
  std::printf("c++17: %d passed, %d failed\n", passes, failures);
  return failures == 0 ? 0 : 1;
}
