// Tests of include/fencing.hpp (the C++17 face), run under ASan + UBSan by
// scripts/test-cpp. Each check names what the contract says should happen.
#include <fencing.hpp>

#include "check.hpp"

#include <unistd.h>

#include <cstdio>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>


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
  auto held = EXPECT_THROW(fencing::LeaseHeldError, store.acquire("report", "worker-b", 1000));
  CHECK(held.status() == fencing::Status::LeaseHeld);
  CHECK(held.holder() == "worker-a");
  CHECK(held.token() == a.token);
  CHECK(held.scope() == "report");

  store.advance_clock(2000);  // A's lease expires (A is paused)
  fencing::Lease b = store.acquire("report", "worker-b", 1000);
  CHECK(b.token == 2);
  fencing::Receipt r = store.put("report", "body", "B's report", fencing::Fence{b.token, std::nullopt});
  CHECK(r.token == b.token);

  // A wakes and writes with its old token: refused, with the fence in the details.
  auto stale =
      EXPECT_THROW(fencing::StaleTokenError, store.put("report", "body", "A's report", fencing::Fence{a.token, std::nullopt}));
  CHECK(stale.presented() == 1);
  CHECK(stale.current() == 2);
  CHECK(stale.scope() == "report");
  CHECK(std::string(stale.what()).size() > 0);
  auto lost = EXPECT_THROW(fencing::LeaseLostError, store.renew("report", a.token, 1000));
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
  auto nul = EXPECT_THROW(fencing::InvalidArgumentError, store.next_token("a\0b"s));
  CHECK(nul.status() == fencing::Status::InvalidArgument);
  CHECK(store.next_token("a") == 1);  // nothing changed by the refused call
  EXPECT_THROW(fencing::InvalidArgumentError, store.acquire("s", "h", 0));
  EXPECT_THROW(fencing::InvalidArgumentError, fencing::Store::open("nosuch:"));
  EXPECT_THROW(fencing::InvalidArgumentError, store.put("", "k", "v", fencing::Fence{1, std::nullopt}));
  // Not UTF-8.
  EXPECT_THROW(fencing::InvalidUtf8Error, store.next_token("\xff"));
  // A seq not after the last one accepted for this token.
  std::uint64_t t = store.next_token("q");
  store.put("q", "k", "1", fencing::Fence{t, 5});
  auto seq = EXPECT_THROW(fencing::SequenceOutOfOrderError, store.put("q", "k", "2", fencing::Fence{t, 5}));
  CHECK(seq.presented() == 5);
  CHECK(seq.last() == 5);
  // Bytes with NULs inside are values, not strings: stored whole.
  const unsigned char bytes[] = {0, 1, 0, 2};
  store.put("q", "bin", bytes, sizeof bytes, fencing::Fence{t, 6});
  CHECK(store.get("q", "bin")->value.size() == 4);
  store.close();
  EXPECT_THROW(fencing::ClosedError, store.next_token("a"));
  EXPECT_THROW(fencing::ClosedError, store.ping());
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
  CHECK(s.ping().ok());
  CHECK(s.close().ok());
  CHECK(s.ping().status() == fencing::Status::Closed);
  auto bad = fencing::nothrow::Store::open("nosuch:");
  CHECK(!bad.ok() && bad.status() == fencing::Status::InvalidArgument);
  CHECK(!bad.error().message.empty());
}

// The calls beyond the paused-worker story: every C operation has one.
static void whole_contract() {
  using namespace std::string_literals;
  using Keys = std::vector<std::string>;
  CHECK(fencing::version() == FENCING_VERSION);
  auto store = fencing::Store::open("memory:?clock=manual");
  CHECK(store.advance_counter("c", 10) == 10);
  CHECK(store.advance_counter("c", 5) == 10);  // never lowered
  CHECK(store.next_token("c") == 11);
  store.ping();  // memory: answers while open

  fencing::Lease a = store.acquire("s", "worker-a", 1000);
  CHECK(a.scope == "s");
  const fencing::Fence fa{a.token, std::nullopt, "worker-a"};
  auto rs = store.apply("s", fa, {fencing::Op::put("k1", "v1"), fencing::Op::put("k2", "v2"), fencing::Op::remove("k1")});
  CHECK(rs.size() == 3 && rs[0].version == 1 && rs[1].version == 1 && rs[2].version == 0 && rs[2].token == a.token);
  auto vm = EXPECT_THROW(fencing::VersionMismatchError, store.execute("s", fa, fencing::Op::put("k2", "x", 5)));
  CHECK(vm.expected() == 5 && vm.actual() == 1);
  CHECK(store.execute("s", fa, fencing::Op::put("k2", "x", 1)).version == 2);
  CHECK(store.remove("s", "k2", fa).version == 0);
  auto nf = EXPECT_THROW(fencing::NotFoundError, store.remove("s", "k2", fa));
  CHECK(nf.key() == "k2" && nf.scope() == "s");
  // Batches are all or nothing: a failed condition leaves k1 absent.
  EXPECT_THROW(fencing::VersionMismatchError,
               store.apply("s", fa, {fencing::Op::put("k1", "v"), fencing::Op::remove("k2", 1)}));
  CHECK(!store.get("s", "k1").has_value());

  for (const char *k : {"a", "b", "c"}) store.put("s", k, "v", fa);
  fencing::Page first = store.list("s", std::nullopt, 2);
  CHECK(first.keys == (Keys{"a", "b"}) && first.next == std::optional<std::string>("b"));
  fencing::Page last = store.list("s", *first.next, 2);
  CHECK(last.keys == Keys{"c"} && !last.next);
  fencing::ScopeStatus st = store.status("s");
  CHECK(st.counter == a.token && st.fence == a.token && st.entries == 3);
  CHECK(st.lease && st.lease->holder == "worker-a" && st.lease->token == a.token);

  // The manual clock stands still: waiting for the live lease times out.
  EXPECT_THROW(fencing::TimeoutError, store.acquire_wait("s", "worker-b", 1000, 20));
  // Another thread gives the wait up long before its 120 s: Timeout, no lease.
  fencing::Cancel cancel;
  std::thread firing([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel.fire();
  });
  EXPECT_THROW(fencing::TimeoutError, store.acquire_wait("s", "worker-b", 1000, 120000, cancel));
  firing.join();
  CHECK(store.status("s").counter == a.token);
  store.advance_clock(1001);
  fencing::Lease b = store.acquire_wait("s", "worker-b", 1000, 20);
  CHECK(b.token == a.token + 1 && b.holder == "worker-b");
  store.claim("s", fencing::Fence{b.token});
  CHECK(store.fence_of("s") == b.token);
  auto stale = EXPECT_THROW(fencing::StaleTokenError, store.put("s", "a", "late", fa));
  CHECK(stale.current() == b.token);
  std::vector<fencing::Rejection> rejected = store.rejections();
  CHECK(rejected.size() == 1 && rejected[0].code == fencing::Status::StaleToken);
  CHECK(rejected[0].holder == std::optional<std::string>("worker-a") && rejected[0].key == std::optional<std::string>("a"));
  CHECK(store.metrics().stale_rejections == 1);
  CHECK(store.metrics_text().find("fencing_") != std::string::npos);
  fencing::Events events = store.events("s", 10);
  CHECK(!events.rejections.empty() && events.rejections[0].presented == a.token);
  CHECK(!events.last_writes.empty() && events.last_writes[0].scope == "s");

  EXPECT_THROW(fencing::LeaseHeldError, store.retire("s"));  // worker-b's lease is live
  CHECK(store.retire("c"));
  CHECK(!store.retire("c"));  // nothing left to drop
  CHECK(store.next_token("c") > 11);  // a retired scope starts above its old tokens
  CHECK(store.failover() >= FENCING_FAILOVER_STEP);
  EXPECT_THROW(fencing::InvalidArgumentError, store.retire("s"));  // no lease now, but entries
  EXPECT_THROW(fencing::StaleTokenError, store.claim("s", fencing::Fence{b.token}));

  // Strings with a NUL inside are refused, in a fence's holder and an op's key too.
  EXPECT_THROW(fencing::InvalidArgumentError, store.claim("s", fencing::Fence{1, std::nullopt, "a\0b"s}));
  EXPECT_THROW(fencing::InvalidArgumentError, store.execute("s", fencing::Fence{1}, fencing::Op::remove("a\0b"s)));
  EXPECT_THROW(fencing::InvalidArgumentError, store.list("s", "a\0b"s, 1));

  fencing::migrate("memory:");
  CHECK(fencing::token_parse("42") == 42);
  EXPECT_THROW(fencing::InvalidArgumentError, fencing::token_parse("042"));
  CHECK(fencing::token_format(FENCING_MAX_TOKEN) == "9223372036854775807");
  auto sqlite = fencing::error_from_sqlite("STALE_TOKEN: scope s");
  CHECK(sqlite && sqlite->status == fencing::Status::StaleToken);
  CHECK(!fencing::error_from_sqlite("no such table: t"));
  CHECK(!fencing::error_from_sqlstate("23505"));
  auto pg = fencing::error_from_sqlstate("FN001", R"({"scope":"s","presented":"1","current":"2"})");
  CHECK(pg && pg->status == fencing::Status::StaleToken && pg->current == 2);

  // Through a lease guard: one conditional write and one batch.
  fencing::LeaseGuard guard = store.hold("g", "worker-g", 60000);
  CHECK(guard.execute(fencing::Op::put("k", "v", 0)).version == 1);
  auto batch = guard.apply({fencing::Op::put("k", "w", 1), fencing::Op::put("j", "x")});
  CHECK(batch.size() == 2 && batch[0].version == 2 && batch[1].token == guard.token());
  guard.finish();
}

// The store's kind and whether it is closed; a lease acquired first and
// then kept alive; a hold whose wait a Cancel ends, taking no lease.
static void kinds_and_keeping() {
  auto store = fencing::Store::open("memory:");
  CHECK(store.backend_kind() == "memory");
  CHECK(!store.is_closed());

  fencing::Lease a = store.acquire("kept", "a", 300);
  fencing::LeaseGuard kept = store.keep_alive(a);
  // Past its TTL in real time: only renewals keep it.
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  kept.check();
  CHECK(kept.token() == a.token);
  EXPECT_THROW(fencing::LeaseHeldError, store.acquire("kept", "b", 1000));
  kept.finish();
  CHECK(!store.status("kept").lease);

  fencing::Lease bad = a;
  bad.scope = std::string(300, 'x');  // longer than the C struct holds
  auto refused = store.nothrow().keep_alive(bad);
  CHECK(!refused.ok() && refused.status() == fencing::Status::InvalidArgument);
  bad = a;
  bad.token = 0;
  CHECK(store.nothrow().keep_alive(bad).status() == fencing::Status::InvalidArgument);

  fencing::LeaseGuard first = store.hold("job", "a", 60000);
  fencing::Cancel cancel;
  cancel.fire();
  EXPECT_THROW(fencing::TimeoutError, store.hold("free", "b", 60000, 60000, cancel));
  CHECK(store.status("free").counter == 0);
  fencing::Cancel unfired;
  EXPECT_THROW(fencing::TimeoutError, store.hold("job", "b", 60000, 10, unfired));
  fencing::LeaseGuard other = store.hold("other", "b", 60000, 1000, unfired);
  CHECK(other.token() == 1);
  other.finish();
  first.finish();

  store.close();
  CHECK(store.is_closed());
  CHECK(store.backend_kind() == "memory");
}

// etcd_check: the transaction body on an etcd store (sent and raced by the
// Rust and CLI tests), a stale token refused, other stores refused.
static void etcd_check() {
  auto memory = fencing::Store::open("memory:");
  EXPECT_THROW(fencing::InvalidArgumentError, memory.etcd_check("s", fencing::Fence{1}));
  const char *cluster = std::getenv("FENCING_TEST_ETCD_CLUSTER");
  if (!cluster) {
    CHECK(!std::getenv("FENCING_REQUIRE_ETCD") || std::string(std::getenv("FENCING_REQUIRE_ETCD")) != "1");
    std::printf("etcd_check on etcd://: skipped (no FENCING_TEST_ETCD_CLUSTER)\n");
    return;
  }
  std::string prefix = "cpp_etcd_check_" + std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  auto store = fencing::Store::open(std::string("etcd://") + cluster + "/" + prefix);
  CHECK(store.backend_kind() == "etcd");
  std::uint64_t t1 = store.next_token("s");
  std::uint64_t t2 = store.next_token("s");
  std::string txn = store.etcd_check("s", fencing::Fence{t2});
  CHECK(txn.rfind("{", 0) == 0 && txn.find("\"compare\"") != std::string::npos &&
        txn.find("\"success\"") != std::string::npos && txn.find("request_put") != std::string::npos);
  store.claim("s", fencing::Fence{t2});
  auto stale = EXPECT_THROW(fencing::StaleTokenError, store.etcd_check("s", fencing::Fence{t1}));
  CHECK(stale.current() == t2);
  auto bad = store.nothrow().etcd_check(std::string_view("s\0x", 3), fencing::Fence{t2});
  CHECK(!bad.ok() && bad.status() == fencing::Status::InvalidArgument);
  store.close();
}

// Store::watch_rejections: each rejection recorded after the watch began,
// from another handle's writes; nullopt when none came; a fired Cancel ends
// the wait; a closed store is Closed.
static void watch_rejections() {
  auto store = fencing::Store::open("memory:");
  store.put("early", "k", "v", fencing::Fence{2});
  EXPECT_THROW(fencing::StaleTokenError, store.put("early", "k", "old", fencing::Fence{1}));
  fencing::RejectionWatch all = store.watch_rejections();
  fencing::RejectionWatch only = store.watch_rejections("late");
  CHECK(!all.next(0));  // "early" came before the watch
  store.put("late", "k", "v", fencing::Fence{5});
  EXPECT_THROW(fencing::StaleTokenError, store.put("late", "k", "old", fencing::Fence{4, std::nullopt, "worker-a"}));
  std::optional<fencing::RecordedRejection> r = all.next(60000);  // a hang, not a speed claim
  CHECK(r && r->scope == "late" && r->presented == 4 && r->current == 5 && r->holder == "worker-a");
  std::optional<fencing::RecordedRejection> same = only.next(60000);
  CHECK(same && same->id == r->id);
  fencing::Cancel cancel;
  cancel.fire();
  CHECK(!all.next(60000, cancel));
  auto bad = store.nothrow().watch_rejections(std::string_view("a\0b", 3));
  CHECK(!bad.ok() && bad.status() == fencing::Status::InvalidArgument);
  EXPECT_THROW(fencing::InvalidArgumentError, store.watch_rejections(""));
  store.close();
  EXPECT_THROW(fencing::ClosedError, all.next(1000));
}

// Store::watch: the lease as it is, then each change made from another
// handle while next() waits in another thread; nullopt when nothing changed;
// a Cancel ends the wait as a timeout does; the watch moves and outlives its
// store handle; errors as exceptions, or as Results from nothrow().
static_assert(!std::is_copy_constructible_v<fencing::LeaseWatch>, "a watch is owned once");
static_assert(std::is_nothrow_move_constructible_v<fencing::LeaseWatch>, "watches move");
static_assert(std::is_nothrow_move_constructible_v<fencing::nothrow::LeaseWatch>, "watches move");

static void watch() {
  const std::uint64_t long_ms = 60000;  // only a change ends it: a hang, not a speed claim
  auto store = fencing::Store::open("memory:");
  fencing::LeaseWatch w = store.watch("w");
  std::optional<fencing::Holding> first = w.next(long_ms);
  CHECK(first && first->scope == "w" && !first->lease);
  CHECK(!w.next(50));  // nothing changed

  std::optional<fencing::Holding> seen;
  std::thread waiting([&] { seen = w.next(long_ms); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  fencing::Lease a = store.acquire("w", "worker-a", 120000);
  waiting.join();
  CHECK(seen && seen->lease && seen->lease->token == a.token && seen->lease->holder == "worker-a");
  CHECK(seen && seen->lease && seen->lease->scope == "w" && seen->lease->ttl_ms == 120000);

  // A renewal is a new state when it moves the expiry: not within the same
  // millisecond of the store's clock.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  store.renew("w", a.token, 120000);
  auto renewed = w.next(long_ms);
  CHECK(renewed && renewed->lease && renewed->lease->token == a.token &&
        renewed->lease->expires_at_ms > seen->lease->expires_at_ms);
  store.release("w", a.token);
  auto freed = w.next(long_ms);
  CHECK(freed && !freed->lease);

  fencing::Cancel cancel;
  auto began = std::chrono::steady_clock::now();
  std::thread firing([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel.fire();
  });
  CHECK(!w.next(long_ms, cancel));  // given up: as a timeout
  firing.join();
  CHECK(std::chrono::steady_clock::now() - began < std::chrono::milliseconds(long_ms / 2));

  // Moved, and outliving the store handle that opened it.
  fencing::LeaseWatch moved = std::move(w);
  CHECK(moved.handle() != nullptr && w.handle() == nullptr);
  auto other = fencing::Store::open("memory:");
  fencing::LeaseWatch orphan = other.watch("o");
  { fencing::Store gone = std::move(other); }
  auto o = orphan.next(long_ms);
  CHECK(o && o->scope == "o" && !o->lease);

  // Errors: the face's exceptions, or Results.
  EXPECT_THROW(fencing::InvalidArgumentError, store.watch(""));
  EXPECT_THROW(fencing::InvalidArgumentError, store.watch(std::string(257, 's')));
  EXPECT_THROW(fencing::InvalidArgumentError, store.watch(std::string_view("a\0b", 3)));
  EXPECT_THROW(fencing::InvalidUtf8Error, store.watch("\xff"));
  auto none = w.nothrow().next(0);  // moved from: holds nothing
  CHECK(!none && none.status() == fencing::Status::NullParameter);
  auto bad = store.nothrow().watch("");
  CHECK(!bad && bad.status() == fencing::Status::InvalidArgument);
  store.close();
  EXPECT_THROW(fencing::ClosedError, moved.next(long_ms));
  CHECK(moved.nothrow().next(0).status() == fencing::Status::Closed);
  EXPECT_THROW(fencing::ClosedError, store.watch("w"));
}

// set_log_callback: a stale put reaches the callback as one WARN naming the
// scope, never the value; an empty callback turns logging off.
static void logs() {
  std::vector<std::pair<std::uint32_t, std::string>> seen;
  std::mutex lock;
  fencing::set_log_callback([&](std::uint32_t level, std::string_view message) {
    std::lock_guard<std::mutex> hold(lock);
    seen.emplace_back(level, std::string(message));
  });
  auto store = fencing::Store::open("memory:");
  auto a = store.acquire("cpp-log", "worker-a", 30000);
  store.release("cpp-log", a.token);
  store.acquire("cpp-log", "worker-b", 30000);
  EXPECT_THROW(fencing::StaleTokenError, store.put("cpp-log", "k", "SECRET-VALUE", fencing::Fence{a.token}));
  fencing::set_log_callback(nullptr);
  CHECK(seen.size() == 1);
  if (!seen.empty()) {
    CHECK(seen[0].first == FENCING_LOG_WARN);
    CHECK(seen[0].second.find("scope=\"cpp-log\"") != std::string::npos);
    CHECK(seen[0].second.find("SECRET") == std::string::npos);
  }
  EXPECT_THROW(fencing::StaleTokenError, store.put("cpp-log", "k", "SECRET-VALUE", fencing::Fence{a.token}));
  CHECK(seen.size() == 1);
}

// Fenced objects: the paused worker on a file:/// directory (two handles, as
// two workers have) and, when a server runs, on S3; a missing path, delete
// then get, conditions; bad input refused, and the object left as it was.
static_assert(!std::is_copy_constructible_v<fencing::Objects>, "an objects handle is owned once");
static_assert(std::is_nothrow_move_constructible_v<fencing::Objects>, "objects handles move");

static std::string text_of(const std::optional<fencing::Object> &o) {
  return o ? std::string(o->value.begin(), o->value.end()) : "(none)";
}

static void stale_holder(const std::string &url) {
  auto a = fencing::Objects::open(url);  // worker A's handle
  auto b = fencing::Objects::open(url);  // worker B's
  CHECK(!a.get("reports/7.csv"));
  fencing::Receipt r = b.put("reports/7.csv", "b,2\n", fencing::Fence{2, std::nullopt, "worker-b"});
  CHECK(r.version == 1 && r.token == 2);
  auto stale = EXPECT_THROW(fencing::StaleTokenError,
                            a.put("reports/7.csv", "a,1\n", fencing::Fence{1, std::nullopt, "worker-a"}));
  CHECK(stale.scope() == "reports/7.csv" && stale.presented() == 1 && stale.current() == 2);
  for (const fencing::Objects *o : {&a, &b}) {
    std::optional<fencing::Object> got = o->get("reports/7.csv");
    CHECK(text_of(got) == "b,2\n" && got->token == 2 && got->version == 1);
  }
}

static void objects() {
  using namespace std::string_literals;
  char dir[] = "/tmp/fencing-cpp-objects.XXXXXX";
  if (!mkdtemp(dir)) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  const std::string url = "file://"s + dir;
  stale_holder(url);
  // Each cloud: its scheme, the variable naming the bucket (container) and
  // the one that makes a missing server a failure.
  for (const auto &[scheme, var, required] : {std::tuple{"s3", "FENCING_TEST_S3_BUCKET", "FENCING_REQUIRE_S3"},
                                              std::tuple{"az", "FENCING_TEST_AZ_CONTAINER", "FENCING_REQUIRE_AZ"}}) {
    const char *name = std::getenv(var);
    const char *require = std::getenv(required);
    if (name && *name) {  // a prefix no other run used: runs share the bucket
      stale_holder(scheme + "://"s + name + "/cpp-" + std::to_string(getpid()) + "-" +
                   std::to_string(std::time(nullptr)));
    } else {
      CHECK(!(require && std::string(require) == "1"));  // FENCING_REQUIRE_*=1 without a server
      std::printf("objects on %s://: skipped (no %s)\n", scheme, var);
    }
  }

  auto o = fencing::Objects::open(url);
  const fencing::Fence two{2};
  CHECK(!o.get("never/written"));
  CHECK(o.put("d", "x", two).version == 1);
  fencing::Receipt gone = o.remove("d", two);
  CHECK(gone.version == 0 && gone.token == 2);
  CHECK(!o.get("d"));
  auto nf = EXPECT_THROW(fencing::NotFoundError, o.remove("d", two));
  CHECK(nf.scope() == "d" && nf.key() == "d");
  EXPECT_THROW(fencing::StaleTokenError, o.put("d", "late", fencing::Fence{1}));  // the path kept its fence
  auto vm = EXPECT_THROW(fencing::VersionMismatchError, o.put("d", "v", two, 1));
  CHECK(vm.expected() == 1 && vm.actual() == 0);  // 0: there is no object
  CHECK(o.put("d", "v", two, 0).version == 3);    // versions never restart
  const unsigned char bin[] = {0, 1, 0, 2};
  CHECK(o.put("bin", bin, sizeof bin, fencing::Fence{FENCING_MAX_TOKEN}).token == FENCING_MAX_TOKEN);
  CHECK(o.get("bin")->value == std::vector<std::uint8_t>(bin, bin + sizeof bin));

  for (const char *bad : {"", "memory", "file://relative/dir", "sqlite:x.db", "s3://Bad_Bucket"}) {
    EXPECT_THROW(fencing::InvalidArgumentError, fencing::Objects::open(bad));
  }
  EXPECT_THROW(fencing::InvalidArgumentError, fencing::Objects::open("memory:\0"s));
  auto missing = EXPECT_THROW(fencing::BackendError, fencing::Objects::open(url + "/missing"));
  CHECK(missing.kind() == "unreachable");
  for (const std::string &bad :
       std::vector<std::string>{"", "/abs", "a//b", "a/../b", "x.fenced/y", "d\0x"s, std::string(1025, 'k')}) {
    EXPECT_THROW(fencing::InvalidArgumentError, o.put(bad, "x", two));
    EXPECT_THROW(fencing::InvalidArgumentError, o.remove(bad, two));
    EXPECT_THROW(fencing::InvalidArgumentError, o.get(bad));
  }
  EXPECT_THROW(fencing::InvalidUtf8Error, o.put("\xff", "x", two));
  for (std::uint64_t bad : {std::uint64_t{0}, FENCING_MAX_TOKEN + 1, static_cast<std::uint64_t>(-1)}) {
    EXPECT_THROW(fencing::InvalidArgumentError, o.put("d", "x", fencing::Fence{bad}));
    EXPECT_THROW(fencing::InvalidArgumentError, o.remove("d", fencing::Fence{bad}));
  }
  EXPECT_THROW(fencing::InvalidArgumentError, o.put("d", "x", fencing::Fence{2, std::nullopt, "a\0b"s}));
  EXPECT_THROW(fencing::InvalidArgumentError, o.put("d", "x", fencing::Fence{2, std::nullopt, ""}));
  std::optional<fencing::Object> kept = o.get("d");
  CHECK(text_of(kept) == "v" && kept->version == 3 && kept->token == 2);

  // Moved: the moved-from handle holds nothing; the nothrow calls give Results.
  fencing::Objects moved = std::move(o);
  CHECK(moved.handle() != nullptr && o.handle() == nullptr);
  CHECK(o.nothrow().get("d").status() == fencing::Status::NullParameter);
  auto stale = moved.nothrow().put("d", "x", fencing::Fence{1});
  CHECK(!stale && stale.status() == fencing::Status::StaleToken && stale.error().current == 2);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

int main() {
  logs();
  paused_worker();
  whole_contract();
  bad_input();
  moves();
  nothrow_face();
  kinds_and_keeping();
  etcd_check();
  watch_rejections();
  watch();
  objects();
  return finish("fencing.hpp: every check passed");
}
