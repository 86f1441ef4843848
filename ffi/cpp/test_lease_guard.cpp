// Tests of fencing::LeaseGuard (include/fencing.hpp): a lease kept alive by
// the C keep-alive (fencing_hold) and ended with the core's one verdict
// (docs/semantics.md, "Ending a held lease"). Run under ASan + UBSan by
// scripts/test-cpp.
#include <fencing.hpp>

#include "check.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>


static_assert(!std::is_copy_constructible_v<fencing::LeaseGuard>, "a hold is owned once");
static_assert(!std::is_copy_assignable_v<fencing::LeaseGuard>);
static_assert(std::is_nothrow_move_constructible_v<fencing::LeaseGuard>);
static_assert(std::is_nothrow_move_assignable_v<fencing::LeaseGuard>);
static_assert(std::is_nothrow_destructible_v<fencing::LeaseGuard>);
static_assert(std::is_nothrow_destructible_v<fencing::nothrow::LeaseGuard>);

constexpr std::uint64_t kTtl = 60000;

static bool scope_has_lease(const fencing::Store &store, const char *scope) {
  return store.status(scope).lease.has_value();
}

static fencing::Store manual_store() { return fencing::Store::open("memory:?clock=manual"); }

static void held_to_the_end_is_released() {
  auto store = manual_store();
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  CHECK(lease.token() == 1);
  CHECK(lease.lease().holder == "a");
  CHECK(lease.lease().ttl_ms == kTtl);
  lease.check();
  // Writes through the guard present its own scope and token.
  fencing::Receipt r = lease.put("k", "v");
  CHECK(r.token == 1 && r.version == 1);
  auto got = lease.get("k");
  CHECK(got && std::string(got->value.begin(), got->value.end()) == "v");
  CHECK(store.get("job", "k")->token == 1);
  lease.claim();
  CHECK(store.fence_of("job") == 1);
  CHECK(lease.remove("k").version == 0);
  EXPECT_THROW(fencing::NotFoundError, lease.remove("k"));
  // While held: another hold is refused at once, or after its wait.
  auto held = EXPECT_THROW(fencing::LeaseHeldError, store.hold("job", "b", kTtl));
  CHECK(held.holder() == "a" && held.token() == 1);
  EXPECT_THROW(fencing::TimeoutError, store.hold("job", "b", kTtl, 10));
  lease.finish();
  CHECK(!scope_has_lease(store, "job"));
  // Finished: the guard holds nothing.
  EXPECT_THROW(fencing::NullParameterError, lease.check());
  EXPECT_THROW(fencing::NullParameterError, lease.finish());
  CHECK(store.acquire("job", "b", kTtl).token == 2);
}

// A takeover no renewal saw yet: only the end finds it, and names the new holder.
static void takeover_is_a_loss_seen_at_finish() {
  auto store = manual_store();
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  store.advance_clock(kTtl + 1);
  fencing::Lease b = store.acquire("job", "b", kTtl);
  lease.check();  // no renewal ran yet: the loss is not known before the end
  auto lost = EXPECT_THROW(fencing::LeaseLostError, lease.finish());
  CHECK(lost.status() == fencing::Status::LeaseLost);
  CHECK(lost.current_token() == b.token);
  CHECK(lost.current_holder() == std::optional<std::string>("b"));
  CHECK(lost.scope() == "job");
  CHECK(!lost.cause());
  CHECK(!lost.error().work_error_is_cause);
  // B's lease is left alone.
  CHECK(scope_has_lease(store, "job"));
  CHECK(store.release("job", b.token));
}

// The loss wins over the work's error, which goes with it as its cause.
static void failed_work_under_a_lost_lease() {
  auto store = manual_store();
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  store.advance_clock(kTtl + 1);
  store.acquire("job", "b", kTtl);
  auto lost = EXPECT_THROW(fencing::LeaseLostError, {
    try {
      throw std::runtime_error("work broke");
    } catch (...) {
      lease.finish(std::current_exception());
    }
  });
  CHECK(lost.current_token() == 2);
  CHECK(lost.error().work_error_is_cause);
  CHECK(lost.cause() != nullptr);
  if (lost.cause()) {
    auto cause = EXPECT_THROW(std::runtime_error, std::rethrow_exception(lost.cause()));
    CHECK(std::string(cause.what()) == "work broke");
  }
}

// Released: failed work ends with its own error.
static void failed_work_under_a_released_lease() {
  auto store = manual_store();
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  auto work = EXPECT_THROW(std::logic_error, {
    try {
      throw std::logic_error("bad step");
    } catch (...) {
      lease.finish(std::current_exception());
    }
  });
  CHECK(std::string(work.what()) == "bad step");
  CHECK(!scope_has_lease(store, "job"));
  // No exception to rethrow: the misuse is reported, and the lease still ended.
  fencing::LeaseGuard again = store.hold("job", "a", kTtl);
  EXPECT_THROW(std::invalid_argument, again.finish(std::exception_ptr()));
  CHECK(!scope_has_lease(store, "job"));
}

static void a_closed_store_ends_with_closed() {
  auto store = manual_store();
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  store.close();
  EXPECT_THROW(fencing::ClosedError, lease.finish());
  auto store2 = manual_store();
  fencing::LeaseGuard lease2 = store2.hold("job", "a", kTtl);
  store2.close();
  auto closed = EXPECT_THROW(fencing::ClosedError, {
    try {
      throw std::runtime_error("work broke");
    } catch (...) {
      lease2.finish(std::current_exception());
    }
  });
  CHECK(closed.cause() != nullptr);
}

static void moves() {
  auto store = manual_store();
  fencing::LeaseGuard a = store.hold("one", "a", kTtl);
  fencing::LeaseGuard b = std::move(a);
  // The moved-from guard holds nothing: every call is NULL_PARAMETER, and
  // its destructor releases nothing.
  EXPECT_THROW(fencing::NullParameterError, a.check());  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(fencing::NullParameterError, a.put("k", "v"));
  EXPECT_THROW(fencing::NullParameterError, a.finish());
  CHECK(a.handle() == nullptr);
  CHECK(b.token() == 1);
  fencing::LeaseGuard c = store.hold("two", "c", kTtl);
  CHECK(scope_has_lease(store, "two"));
  c = std::move(b);  // c's own lease is released; it now holds b's
  CHECK(!scope_has_lease(store, "two"));
  CHECK(scope_has_lease(store, "one"));
  CHECK(c.token() == 1);
  c.finish();
  CHECK(!scope_has_lease(store, "one"));
}

static void destructor_releases_a_live_lease() {
  auto store = manual_store();
  {
    fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
    CHECK(scope_has_lease(store, "job"));
  }
  CHECK(!scope_has_lease(store, "job"));
  // Also quietly after the store was closed, and after the store handle was
  // freed (the hold keeps the store open for itself).
  {
    fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
    store.close();
  }
  std::optional<fencing::LeaseGuard> outliving;
  {
    auto other = fencing::Store::open("memory:");
    outliving.emplace(other.hold("job", "a", kTtl));
  }
  outliving->check();
  outliving->finish();
}

static void bad_input_changes_nothing() {
  using namespace std::string_literals;
  auto store = manual_store();
  EXPECT_THROW(fencing::InvalidArgumentError, store.hold("jo\0b"s, "a", kTtl));
  EXPECT_THROW(fencing::InvalidArgumentError, store.hold("job", "a\0"s, kTtl));
  EXPECT_THROW(fencing::InvalidArgumentError, store.hold("job", "a", 0));
  EXPECT_THROW(fencing::InvalidArgumentError, store.hold("job", "a", 366ull * 24 * 3600 * 1000 + 1));
  EXPECT_THROW(fencing::InvalidArgumentError, store.hold("", "a", kTtl));
  EXPECT_THROW(fencing::InvalidUtf8Error, store.hold("\xff", "a", kTtl));
  CHECK(!scope_has_lease(store, "job"));
  CHECK(store.next_token("job") == 1);  // no token was spent by a refused hold
  fencing::LeaseGuard lease = store.hold("job", "a", kTtl);
  EXPECT_THROW(fencing::InvalidArgumentError, lease.put("k\0"s, "v"));
  EXPECT_THROW(fencing::InvalidArgumentError, lease.get("k\0"s));
  CHECK(!store.get("job", "k"));
  lease.finish();
}

// The callback runs once on the keep-alive thread when a renewal finds the
// lease lost; the work's thread sees the loss at check() and finish().
static void the_callback_reports_a_loss_seen_by_the_keep_alive() {
  auto store = fencing::Store::open("memory:");
  std::atomic<int> calls{0};
  std::atomic<int> why{0};
  std::atomic<bool> on_keep_alive_thread{false};
  const std::thread::id work_thread = std::this_thread::get_id();
  fencing::LeaseGuard lease = store.hold("job", "a", 300, 0, [&](fencing::Status s) {
    why = static_cast<int>(s);
    on_keep_alive_thread = std::this_thread::get_id() != work_thread;
    ++calls;
  });
  // Another party ends the lease (whether it was still live is the clock's
  // business on a loaded machine, so not checked) and takes the scope.
  (void)store.release("job", lease.token());
  fencing::Lease b = store.acquire("job", "b", kTtl);
  // Waits for the event, up to a minute (not a timing assertion).
  for (int i = 0; i < 12000 && calls == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(calls == 1);
  CHECK(why == static_cast<int>(fencing::Status::LeaseLost));
  CHECK(on_keep_alive_thread);
  auto seen = EXPECT_THROW(fencing::LeaseLostError, lease.check());
  CHECK(seen.current_token() == b.token);
  auto lost = EXPECT_THROW(fencing::LeaseLostError, lease.finish());
  CHECK(lost.current_token() == b.token);
  CHECK(lost.current_holder() == std::optional<std::string>("b"));
  CHECK(calls == 1);
}

static void nothrow_guard() {
  auto store = std::move(fencing::nothrow::Store::open("memory:?clock=manual")).value();
  auto started = store.hold("job", "a", kTtl);
  CHECK(started.ok());
  fencing::nothrow::LeaseGuard lease = std::move(started).value();
  CHECK(lease.token().value() == 1);
  CHECK(lease.put("k", "v").ok());
  CHECK(store.advance_clock(kTtl + 1).ok());
  CHECK(store.acquire("job", "b", kTtl).ok());
  auto verdict = lease.finish(true);
  CHECK(!verdict.ok());
  CHECK(verdict.status() == fencing::Status::LeaseLost);
  CHECK(verdict.error().current_token == 2);
  CHECK(verdict.error().current_holder == std::optional<std::string>("b"));
  CHECK(verdict.error().work_error_is_cause);
  auto again = lease.finish();
  CHECK(again.status() == fencing::Status::NullParameter);
  auto bad = store.hold("job", "a", 0);
  CHECK(bad.status() == fencing::Status::InvalidArgument);
}

int main() {
  held_to_the_end_is_released();
  takeover_is_a_loss_seen_at_finish();
  failed_work_under_a_lost_lease();
  failed_work_under_a_released_lease();
  a_closed_store_ends_with_closed();
  moves();
  destructor_releases_a_live_lease();
  bad_input_changes_nothing();
  the_callback_reports_a_loss_seen_by_the_keep_alive();
  nothrow_guard();
  return finish("fencing.hpp lease guard: every check passed");
}
