// Tests of include/fencing.hpp (the C++17 face), run under ASan + UBSan by
// scripts/test-cpp. Each check names what the contract says should happen.
#include <fencing.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

static int failures = 0;
#define CHECK(cond)                                                 \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::fprintf(stderr, "%s:%d: FAILED %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                   \
    }                                                               \
  } while (0)

template <class E, class F>
static E expect_throw(F &&f) {
  try {
    f();
  } catch (const E &e) {
    return e;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "wrong exception: %s\n", e.what());
  }
  ++failures;
  std::fprintf(stderr, "expected an exception, none or another came\n");
  std::exit(1);
}

static_assert(!std::is_copy_constructible_v<fencing::Store>, "a store handle is owned once");
static_assert(std::is_nothrow_move_constructible_v<fencing::Store>, "stores move");
static_assert(std::is_base_of_v<fencing::FencingError, fencing::StaleTokenError>);
static_assert(std::is_base_of_v<std::runtime_error, fencing::FencingError>);

static void paused_worker() {
  auto store = fencing::Store::open("memory:?clock=manual");
  CHECK(store.location() == "memory:");
  fencing::Lease a = store.acquire("report", "worker-a", 1000);
  CHECK(a.token == 1);
  CHECK(a.holder == "worker-a");
  // While A's lease is live, B is refused with the live lease's details.
  auto held = expect_throw<fencing::LeaseHeldError>([&] { store.acquire("report", "worker-b", 1000); });
  CHECK(held.status() == fencing::Status::LeaseHeld);
  CHECK(held.holder() == "worker-a");
  CHECK(held.token() == a.token);
  CHECK(held.scope() == "report");

  CHECK(fencing_advance_clock(store.handle(), 2000) == FENCING_OK);  // A's lease expires (A is paused)
  fencing::Lease b = store.acquire("report", "worker-b", 1000);
  CHECK(b.token == 2);
  fencing::Receipt r = store.put("report", "body", "B's report", fencing::Fence{b.token, std::nullopt});
  CHECK(r.token == b.token);

  // A wakes and writes with its old token: refused, with the fence in the details.
  auto stale = expect_throw<fencing::StaleTokenError>(
      [&] { store.put("report", "body", "A's report", fencing::Fence{a.token, std::nullopt}); });
  CHECK(stale.presented() == 1);
  CHECK(stale.current() == 2);
  CHECK(stale.scope() == "report");
  CHECK(std::string(stale.what()).size() > 0);
  auto lost = expect_throw<fencing::LeaseLostError>([&] { store.renew("report", a.token, 1000); });
  CHECK(lost.holder() == std::optional<std::string>("worker-b"));
  CHECK(lost.token() == 2);

  auto entry = store.get("report", "body");
  CHECK(entry.has_value());
  CHECK(std::string(entry->value.begin(), entry->value.end()) == "B's report");
  CHECK(entry->token == 2);
  CHECK(!store.get("report", "missing").has_value());
  CHECK(store.fence_of("report") == 2);
  CHECK(store.release("report", b.token));
  CHECK(!store.release("report", b.token));
}

static void bad_input() {
  auto store = fencing::Store::open("memory:");
  // A NUL inside a string_view: refused before C could cut the string short.
  using namespace std::string_literals;
  auto nul = expect_throw<fencing::InvalidArgumentError>([&] { store.next_token("a\0b"s); });
  CHECK(nul.status() == fencing::Status::InvalidArgument);
  CHECK(store.next_token("a") == 1);  // nothing changed by the refused call
  expect_throw<fencing::InvalidArgumentError>([&] { store.acquire("s", "h", 0); });
  expect_throw<fencing::InvalidArgumentError>([] { fencing::Store::open("nosuch:"); });
  expect_throw<fencing::InvalidArgumentError>([&] { store.put("", "k", "v", fencing::Fence{1, std::nullopt}); });
  // Not UTF-8.
  expect_throw<fencing::InvalidUtf8Error>([&] { store.next_token("\xff"); });
  // A seq not after the last one accepted for this token.
  std::uint64_t t = store.next_token("q");
  store.put("q", "k", "1", fencing::Fence{t, 5});
  auto seq = expect_throw<fencing::SequenceOutOfOrderError>([&] { store.put("q", "k", "2", fencing::Fence{t, 5}); });
  CHECK(seq.presented() == 5);
  CHECK(seq.last() == 5);
  // Bytes with NULs inside are values, not strings: stored whole.
  const unsigned char bytes[] = {0, 1, 0, 2};
  store.put("q", "bin", bytes, sizeof bytes, fencing::Fence{t, 6});
  CHECK(store.get("q", "bin")->value.size() == 4);
  store.close();
  expect_throw<fencing::ClosedError>([&] { store.next_token("a"); });
}

static void moves() {
  auto a = fencing::Store::open("memory:");
  CHECK(a.next_token("s") == 1);
  fencing::Store b = std::move(a);  // the handle moves; a is empty and its destructor frees nothing
  CHECK(b.next_token("s") == 2);
  auto c = fencing::Store::open("memory:");
  c = std::move(b);  // c's old store is freed (ASan: no leak), b's is now c's
  CHECK(c.next_token("s") == 3);
}

static void nothrow_face() {
  auto opened = fencing::nothrow::Store::open("memory:");
  CHECK(opened.ok());
  fencing::nothrow::Store s = std::move(opened).value();
  CHECK(s.location().ok() && s.location().value() == "memory:");
  auto t = s.next_token("s");
  CHECK(t.ok() && t.value() == 1);
  CHECK(s.put("s", "k", "v", fencing::Fence{t.value(), std::nullopt}).ok());
  CHECK(s.next_token("s").value() == 2);
  CHECK(s.put("s", "k", "v2", fencing::Fence{2, std::nullopt}).ok());
  auto stale = s.put("s", "k", "old", fencing::Fence{1, std::nullopt});
  CHECK(!stale.ok());
  CHECK(stale.status() == fencing::Status::StaleToken);
  CHECK(stale.error().current == 2);
  CHECK(stale.error().presented == 1);
  CHECK(fencing::status_name(stale.status()) == "STALE_TOKEN");
  auto bad = fencing::nothrow::Store::open("nosuch:");
  CHECK(!bad.ok() && bad.status() == fencing::Status::InvalidArgument);
  CHECK(!bad.error().message.empty());
}

int main() {
  paused_worker();
  bad_input();
  moves();
  nothrow_face();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("fencing.hpp: every check passed\n");
  return 0;
}
