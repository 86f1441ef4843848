// The C++17 face of fencing: header-only, over the C ABI of fencing.h.
//
//   fencing::Store store = fencing::Store::open("sqlite:app.db");
//   fencing::Lease lease = store.acquire("report", "worker-a", 30000);
//   store.put("report", "body", bytes, fencing::Fence{lease.token});
//     // a newer holder's token was accepted since: throws StaleTokenError
//
// Every rule and verdict is the core's: this header only translates. A
// failed call throws the exception class of its status code (StaleTokenError,
// LeaseLostError, ...), each carrying the details as typed members. Built
// without exceptions (-fno-exceptions), or by choice, fencing::nothrow::Store
// has the same calls returning fencing::Result<T> (a value or an Error).
//
// Tokens are std::uint64_t; strings are taken as std::string_view (copied to
// a NUL-terminated string for the C call; one with a NUL inside is
// INVALID_ARGUMENT, since C would silently cut it there). Values are bytes.
//
// A lease held through work: store.hold(scope, holder, ttl_ms) returns a
// fencing::LeaseGuard that the C keep-alive (fencing_hold) renews in the
// background. Write through it (put, remove, get, claim: the lease's own
// scope and token), call check() before each protected step, and end it with
// finish(): the core's one verdict (docs/semantics.md, "Ending a held
// lease"): released, or the loss (LeaseLostError naming the current lease,
// ClosedError, BackendError), which wins over the work's error and carries
// it as cause(). A guard not finished is released by its destructor, which
// never throws. A loss callback, if given, runs on the keep-alive thread.
#ifndef FENCING_HPP
#define FENCING_HPP

#include "fencing.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define FENCING_HPP_EXCEPTIONS 1
#include <exception>
#include <stdexcept>
#endif

namespace fencing {

/// The C ABI's status codes (fencing_status), with the same numbers.
enum class Status : std::uint32_t {
  Ok = FENCING_OK,
  StaleToken = FENCING_STALE_TOKEN,
  SequenceOutOfOrder = FENCING_SEQUENCE_OUT_OF_ORDER,
  VersionMismatch = FENCING_VERSION_MISMATCH,
  NotFound = FENCING_NOT_FOUND,
  LeaseHeld = FENCING_LEASE_HELD,
  LeaseLost = FENCING_LEASE_LOST,
  TokenExhausted = FENCING_TOKEN_EXHAUSTED,
  InvalidArgument = FENCING_INVALID_ARGUMENT,
  Timeout = FENCING_TIMEOUT,
  Backend = FENCING_BACKEND,
  Closed = FENCING_CLOSED,
  NullParameter = FENCING_NULL_PARAMETER,
  InvalidUtf8 = FENCING_INVALID_UTF8,
  BufferTooSmall = FENCING_BUFFER_TOO_SMALL,
  Panic = FENCING_PANIC,
};

/// The stable name of a status ("STALE_TOKEN", ...), from the library.
inline std::string_view status_name(Status s) noexcept {
  const char *name = fencing_status_name(static_cast<std::uint32_t>(s));
  return name ? std::string_view(name) : std::string_view();
}

/// A failure: the status and every detail the C ABI reports for it (see
/// fencing_error in fencing.h for which fields each status fills; the others
/// are empty or 0). Owns its strings.
struct Error {
  Status status = Status::Ok;
  std::string message;
  std::string scope;
  std::string key;
  std::optional<std::string> holder;  // LEASE_LOST: nullopt when no holder is known
  std::uint64_t presented = 0;
  std::uint64_t current = 0;
  std::uint64_t last = 0;
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
  std::uint64_t token = 0;
  std::uint64_t remaining_ms = 0;
  // LEASE_LOST: the lease current now (0 and nullopt: none).
  std::uint64_t current_token = 0;
  std::optional<std::string> current_holder;
  // Only from a lease guard's finish: the work failed, and its error goes
  // with this loss as its cause (docs/semantics.md, "Ending a held lease").
  bool work_error_is_cause = false;
};

namespace detail {

inline std::string copy(const char *s) { return s ? std::string(s) : std::string(); }

/// The calling thread's last failure (the C ABI keeps it per thread).
inline Error last_error(fencing_status status) {
  fencing_error e{};
  Error out;
  out.status = static_cast<Status>(status);
  if (fencing_last_error(&e) != FENCING_OK || e.status != status) {
    out.message = std::string(status_name(out.status));
    return out;
  }
  out.message = copy(e.message);
  out.scope = copy(e.scope);
  out.key = copy(e.key);
  if (e.holder) out.holder = std::string(e.holder);
  out.presented = e.presented;
  out.current = e.current;
  out.last = e.last;
  out.expected = e.expected;
  out.actual = e.actual;
  out.token = e.token;
  out.remaining_ms = e.remaining_ms;
  out.current_token = e.current_token;
  if (e.current_holder) out.current_holder = std::string(e.current_holder);
  return out;
}

inline Error invalid_argument(std::string message) {
  Error e;
  e.status = Status::InvalidArgument;
  e.message = std::move(message);
  return e;
}

/// A NUL-terminated copy of `s`, or nullopt when `s` holds a NUL (C would
/// read a shorter string than the caller passed).
inline std::optional<std::string> c_string(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) return std::nullopt;
  return std::string(s);
}

}  // namespace detail

/// A value or the Error that prevented it: what fencing::nothrow returns.
template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}          // NOLINT: implicit on purpose
  Result(Error error) : v_(std::move(error)) {}      // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  /// The value; only when ok().
  T &value() & { return std::get<0>(v_); }
  const T &value() const & { return std::get<0>(v_); }
  T &&value() && { return std::get<0>(std::move(v_)); }
  /// The failure; only when !ok().
  const Error &error() const & { return std::get<1>(v_); }
  Status status() const noexcept { return ok() ? Status::Ok : std::get<1>(v_).status; }

 private:
  std::variant<T, Error> v_;
};

/// A lease as acquire/renew report it.
struct Lease {
  std::uint64_t token = 0;
  std::uint64_t ttl_ms = 0;
  std::uint64_t remaining_ms = 0;
  std::uint64_t expires_at_ms = 0;
  std::string holder;
};

/// What a fenced operation presents: the token, and optionally a seq that
/// must be after the last one accepted for this token.
struct Fence {
  std::uint64_t token = 0;
  std::optional<std::uint64_t> seq;
};

struct Receipt {
  std::uint64_t version = 0;
  std::uint64_t token = 0;
};

struct Entry {
  std::vector<std::uint8_t> value;
  std::uint64_t version = 0;
  std::uint64_t token = 0;
};

/// Called once, on the lease guard's own keep-alive thread (not the thread
/// doing the work), when the lease is lost: the status says why (LeaseLost,
/// Closed or Backend). It must return promptly, must not throw (it runs
/// under a noexcept trampoline: a throw ends the process), and must not
/// finish or destroy the guard: set a flag, and let the work's thread call
/// check() or finish(). Never called once finish() or the destructor returned.
using LossCallback = std::function<void(Status)>;

namespace detail {

inline void on_lost_trampoline(fencing_status status, void *user_data) noexcept {
  (*static_cast<LossCallback *>(user_data))(static_cast<Status>(status));
}

inline Entry entry_of(const fencing_entry *e) {
  Entry entry;
  const std::uint8_t *v = fencing_entry_value(e);
  std::size_t n = fencing_entry_value_len(e);
  if (n > 0) entry.value.assign(v, v + n);
  entry.version = fencing_entry_version(e);
  entry.token = fencing_entry_token(e);
  return entry;
}

}  // namespace detail

namespace nothrow {

/// A lease held alive in the background by the core's keep-alive (the C
/// fencing_hold), from Store::hold until finish(). Writes through it present
/// the lease's own scope and token. finish() gives the core's one verdict
/// (docs/semantics.md, "Ending a held lease"); the destructor of a guard not
/// finished releases the lease quietly. Movable, not copyable; a moved-from
/// or finished guard holds nothing, and every call on it is NullParameter.
/// Any thread may call check() and lease() at once (as fencing_hold_check).
class LeaseGuard {
 public:
  static Result<LeaseGuard> start(const fencing_store *store, std::string_view scope, std::string_view holder,
                                  std::uint64_t ttl_ms, std::uint64_t timeout_ms = 0,
                                  LossCallback on_lost = nullptr) {
    auto s = detail::c_string(scope);
    auto h = detail::c_string(holder);
    if (!s) return detail::invalid_argument("scope contains a NUL byte");
    if (!h) return detail::invalid_argument("holder contains a NUL byte");
    std::unique_ptr<LossCallback> callback;
    if (on_lost) callback = std::make_unique<LossCallback>(std::move(on_lost));
    fencing_hold *hold = nullptr;
    fencing_status st = fencing_hold_start(store, s->c_str(), h->c_str(), ttl_ms, timeout_ms,
                                           callback ? detail::on_lost_trampoline : nullptr, callback.get(), &hold);
    if (st != FENCING_OK) return detail::last_error(st);
    return LeaseGuard(hold, std::move(callback));
  }

  LeaseGuard(LeaseGuard &&other) noexcept
      : h_(std::exchange(other.h_, nullptr)), on_lost_(std::move(other.on_lost_)) {}
  LeaseGuard &operator=(LeaseGuard &&other) noexcept {
    if (this != &other) {
      end_quietly();
      h_ = std::exchange(other.h_, nullptr);
      on_lost_ = std::move(other.on_lost_);
    }
    return *this;
  }
  LeaseGuard(const LeaseGuard &) = delete;
  LeaseGuard &operator=(const LeaseGuard &) = delete;
  /// Stops renewing and releases the lease if it is still held; no verdict.
  /// Returns at once: the release runs in the background (fencing_hold_free).
  ~LeaseGuard() { end_quietly(); }

  /// Ok while the lease is held; once it is lost, the loss. Call it before
  /// each protected step.
  Result<std::monostate> check() const { return status_of(fencing_hold_check(h_)); }

  /// The lease as last renewed.
  Result<Lease> lease() const {
    fencing_lease l{};
    fencing_status st = fencing_hold_lease(h_, &l);
    if (st != FENCING_OK) return detail::last_error(st);
    return Lease{l.token, l.ttl_ms, l.remaining_ms, l.expires_at_ms, std::string(l.holder)};
  }

  /// The lease's token (the one every write through the guard presents).
  Result<std::uint64_t> token() const {
    Result<Lease> l = lease();
    if (!l) return l.error();
    return l.value().token;
  }

  Result<Receipt> put(std::string_view key, const void *value, std::size_t len) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_receipt r{};
    fencing_status st = fencing_hold_put(h_, k->c_str(), static_cast<const std::uint8_t *>(value), len, &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }
  Result<Receipt> put(std::string_view key, std::string_view value) const {
    return put(key, value.data(), value.size());
  }

  /// Deletes `key` (NotFound when it does not exist).
  Result<Receipt> remove(std::string_view key) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_receipt r{};
    fencing_status st = fencing_hold_delete(h_, k->c_str(), &r);
    if (st != FENCING_OK) return detail::last_error(st);
    return Receipt{r.version, r.token};
  }

  /// The checked read: StaleToken once a newer token was accepted.
  Result<std::optional<Entry>> get(std::string_view key) const {
    auto k = detail::c_string(key);
    if (!k) return detail::invalid_argument("key contains a NUL byte");
    fencing_entry *e = nullptr;
    fencing_status st = fencing_hold_get(h_, k->c_str(), &e);
    if (st != FENCING_OK) return detail::last_error(st);
    if (!e) return std::optional<Entry>();
    std::optional<Entry> entry(detail::entry_of(e));
    fencing_entry_free(e);
    return entry;
  }

  /// Raises the scope's fence to the lease's token.
  Result<std::monostate> claim() const { return status_of(fencing_hold_claim(h_)); }

  /// Ends the hold with the work's outcome and the core's verdict: Ok when
  /// the lease was held to the end and released; otherwise the loss
  /// (LeaseLost with current_token/current_holder, Closed, Backend), with
  /// work_error_is_cause set when the work failed: the loss wins, and the
  /// caller's own error goes with it. The guard holds nothing afterwards.
  Result<std::monostate> finish(bool work_failed = false) {
    bool attach = false;
    fencing_status st = fencing_hold_finish(h_, work_failed, &attach);
    if (st == FENCING_NULL_PARAMETER && !h_) return detail::last_error(st);
    h_ = nullptr;  // freed by finish, whatever the verdict
    on_lost_.reset();
    if (st == FENCING_OK) return std::monostate{};
    Error e = detail::last_error(st);
    e.work_error_is_cause = attach;
    return e;
  }

  /// The C handle, for calls this header does not wrap (still owned here).
  const fencing_hold *handle() const noexcept { return h_; }

 private:
  LeaseGuard(fencing_hold *h, std::unique_ptr<LossCallback> on_lost) noexcept
      : h_(h), on_lost_(std::move(on_lost)) {}

  static Result<std::monostate> status_of(fencing_status st) {
    if (st != FENCING_OK) return detail::last_error(st);
    return std::monostate{};
  }

  // The callback is freed only after the hold: the keep-alive thread may be
  // running it until fencing_hold_free returns.
  void end_quietly() noexcept {
    fencing_hold_free(std::exchange(h_, nullptr));
    on_lost_.reset();
  }

  fencing_hold *h_ = nullptr;
  std::unique_ptr<LossCallback> on_lost_;
};

/// A store handle that never throws (beyond std::bad_alloc): every call
/// returns Result<T>. Movable, not copyable; freed by its destructor.
class Store {
 public:
  static Result<Store> open(std::string_view url) {
    auto u = detail::c_string(url);
    if (!u) return detail::invalid_argument("url contains a NUL byte");
    fencing_store *s = nullptr;
    fencing_status st = fencing_store_open(u->c_str(), &s);
    if (st != FENCING_OK) return detail::last_error(st);
    return Store(s);
  }

  Store(Store &&other) noexcept : s_(std::exchange(other.s_, nullptr)) {}
  Store &operator=(Store &&other) noexcept {
    if (this != &other) {
      fencing_store_free(s_);
      s_ = std::exchange(other.s_, nullptr);
    }
    return *this;
  }
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;
  ~Store() { fencing_store_free(s_); }

  /// The C handle, for calls this header does not wrap (still owned here).
  const fencing_store *handle() const noexcept { return s_; }

  /// Where the store is (`fencing_store_location`): `memory:`, `sqlite:` and
  /// the file's absolute path, or the PostgreSQL URL without its password.
  Result<std::string> location() const {
    char *text = nullptr;
    fencing_status st = fencing_store_location(s_, &text);
    if (st != FENCING_OK) return detail::last_error(st);
    std::string out(text);
    fencing_string_free(text);
    return out;
  }

  Result<std::uint64_t> next_token(std::string_view scope) const {
    return call<std::uint64_t>({scope}, [&](const std::string *a, std::uint64_t *out) {
      return fencing_next_token(s_, a[0].c_str(), out);
    });
  }

  Result<std::uint64_t> fence_of(std::string_view scope) const {
    return call<std::uint64_t>({scope}, [&](const std::string *a, std::uint64_t *out) {
      return fencing_fence_of(s_, a[0].c_str(), out);
    });
  }

  Result<Lease> acquire(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms) const {
    return lease_call({scope, holder}, [&](const std::string *a, fencing_lease *out) {
      return fencing_acquire(s_, a[0].c_str(), a[1].c_str(), ttl_ms, out);
    });
  }

  Result<Lease> renew(std::string_view scope, std::uint64_t token, std::uint64_t ttl_ms) const {
    return lease_call({scope}, [&](const std::string *a, fencing_lease *out) {
      return fencing_renew(s_, a[0].c_str(), token, ttl_ms, out);
    });
  }

  /// Whether the lease with `token` was still live (and is now ended).
  Result<bool> release(std::string_view scope, std::uint64_t token) const {
    return call<bool>({scope}, [&](const std::string *a, bool *out) {
      return fencing_release(s_, a[0].c_str(), token, out);
    });
  }

  Result<Receipt> put(std::string_view scope, std::string_view key, const void *value, std::size_t len,
                      const Fence &fence) const {
    return call<Receipt>({scope, key}, [&](const std::string *a, Receipt *out) {
      fencing_fence f = c_fence(fence);
      fencing_receipt r{};
      fencing_status st =
          fencing_put(s_, a[0].c_str(), a[1].c_str(), static_cast<const std::uint8_t *>(value), len, &f, &r);
      if (st == FENCING_OK) *out = Receipt{r.version, r.token};
      return st;
    });
  }
  Result<Receipt> put(std::string_view scope, std::string_view key, std::string_view value,
                      const Fence &fence) const {
    return put(scope, key, value.data(), value.size(), fence);
  }

  /// The entry, or nullopt when there is none. With a fence the read is
  /// checked like a write (STALE_TOKEN) but raises nothing.
  Result<std::optional<Entry>> get(std::string_view scope, std::string_view key,
                                   const std::optional<Fence> &fence = std::nullopt) const {
    return call<std::optional<Entry>>({scope, key}, [&](const std::string *a, std::optional<Entry> *out) {
      fencing_fence f = fence ? c_fence(*fence) : fencing_fence{};
      fencing_entry *e = nullptr;
      fencing_status st = fencing_get(s_, a[0].c_str(), a[1].c_str(), fence ? &f : nullptr, &e);
      if (st != FENCING_OK) return st;
      if (e) {
        const std::uint8_t *v = fencing_entry_value(e);
        std::size_t n = fencing_entry_value_len(e);
        Entry entry;
        if (n > 0) entry.value.assign(v, v + n);
        entry.version = fencing_entry_version(e);
        entry.token = fencing_entry_token(e);
        fencing_entry_free(e);
        *out = std::move(entry);
      }
      return st;
    });
  }

  /// Acquires the scope's lease (waiting up to `timeout_ms` when not 0)
  /// and keeps it alive until the guard's finish(). The guard keeps the
  /// store open for itself: it may outlive this handle.
  Result<LeaseGuard> hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                          std::uint64_t timeout_ms = 0, LossCallback on_lost = nullptr) const {
    return LeaseGuard::start(s_, scope, holder, ttl_ms, timeout_ms, std::move(on_lost));
  }

  /// Closes the store: every later call fails with CLOSED.
  Result<std::monostate> close() const {
    fencing_status st = fencing_store_close(s_);
    if (st != FENCING_OK) return detail::last_error(st);
    return std::monostate{};
  }

 private:
  explicit Store(fencing_store *s) noexcept : s_(s) {}

  static fencing_fence c_fence(const Fence &f) noexcept {
    fencing_fence c{};
    c.token = f.token;
    c.seq = f.seq.value_or(0);
    c.has_seq = f.seq.has_value();
    return c;
  }

  // Copies the string arguments NUL-terminated (refusing inner NULs), runs
  // the C call, and turns a failure into the thread's last Error.
  template <class T, class F>
  static Result<T> call(std::initializer_list<std::string_view> args, F &&c_call) {
    std::string copies[2];
    std::size_t i = 0;
    for (std::string_view arg : args) {
      auto s = detail::c_string(arg);
      if (!s) return detail::invalid_argument("argument " + std::to_string(i + 1) + " contains a NUL byte");
      copies[i++] = std::move(*s);
    }
    T out{};
    fencing_status st = c_call(copies, &out);
    if (st != FENCING_OK) return detail::last_error(st);
    return out;
  }

  template <class F>
  static Result<Lease> lease_call(std::initializer_list<std::string_view> args, F &&c_call) {
    return call<Lease>(args, [&](const std::string *a, Lease *out) {
      fencing_lease l{};
      fencing_status st = c_call(a, &l);
      if (st == FENCING_OK) *out = Lease{l.token, l.ttl_ms, l.remaining_ms, l.expires_at_ms, std::string(l.holder)};
      return st;
    });
  }

  fencing_store *s_ = nullptr;
};

}  // namespace nothrow

#ifdef FENCING_HPP_EXCEPTIONS

/// The root of every fencing exception: what() is the library's message,
/// error() every detail, status() the code. Catch a subclass for one code.
class FencingError : public std::runtime_error {
 public:
  explicit FencingError(Error e, std::exception_ptr cause = nullptr)
      : std::runtime_error(e.message), e_(std::move(e)), cause_(std::move(cause)) {}
  Status status() const noexcept { return e_.status; }
  const Error &error() const noexcept { return e_; }
  /// The work's own exception, when a lease guard's finish reports a loss
  /// under failed work (the loss wins, the work's error goes with it); else
  /// null. std::rethrow_exception(cause()) to inspect it.
  const std::exception_ptr &cause() const noexcept { return cause_; }

 private:
  Error e_;
  std::exception_ptr cause_;
};

/// The token is older than the scope's fence: retrying it can never succeed.
class StaleTokenError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  std::uint64_t presented() const noexcept { return error().presented; }
  std::uint64_t current() const noexcept { return error().current; }
};
class SequenceOutOfOrderError : public FencingError {
 public:
  using FencingError::FencingError;
  std::uint64_t presented() const noexcept { return error().presented; }
  std::uint64_t last() const noexcept { return error().last; }
};
class VersionMismatchError : public FencingError {
 public:
  using FencingError::FencingError;
  std::uint64_t expected() const noexcept { return error().expected; }
  std::uint64_t actual() const noexcept { return error().actual; }
};
class NotFoundError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  const std::string &key() const noexcept { return error().key; }
};
class LeaseHeldError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  const std::string &holder() const { return *error().holder; }
  std::uint64_t token() const noexcept { return error().token; }
  std::uint64_t remaining_ms() const noexcept { return error().remaining_ms; }
};
class LeaseLostError : public FencingError {
 public:
  using FencingError::FencingError;
  const std::string &scope() const noexcept { return error().scope; }
  /// The lease current now: its token and holder; 0 and nullopt when none is.
  std::uint64_t current_token() const noexcept { return error().current_token; }
  const std::optional<std::string> &current_holder() const noexcept { return error().current_holder; }
  /// Deprecated copies of current_holder() and current_token().
  const std::optional<std::string> &holder() const noexcept { return error().holder; }
  std::uint64_t token() const noexcept { return error().token; }
};
class TokenExhaustedError : public FencingError {
  using FencingError::FencingError;
};
class InvalidArgumentError : public FencingError {
  using FencingError::FencingError;
};
class TimeoutError : public FencingError {
  using FencingError::FencingError;
};
class BackendError : public FencingError {
  using FencingError::FencingError;
};
class ClosedError : public FencingError {
  using FencingError::FencingError;
};
class NullParameterError : public FencingError {
  using FencingError::FencingError;
};
class InvalidUtf8Error : public FencingError {
  using FencingError::FencingError;
};
class BufferTooSmallError : public FencingError {
  using FencingError::FencingError;
};
class PanicError : public FencingError {
  using FencingError::FencingError;
};

/// Throws the exception class of `e.status`, with `cause` (see cause()).
[[noreturn]] inline void throw_error(Error e, std::exception_ptr cause = nullptr) {
  switch (e.status) {
    case Status::StaleToken: throw StaleTokenError(std::move(e), std::move(cause));
    case Status::SequenceOutOfOrder: throw SequenceOutOfOrderError(std::move(e), std::move(cause));
    case Status::VersionMismatch: throw VersionMismatchError(std::move(e), std::move(cause));
    case Status::NotFound: throw NotFoundError(std::move(e), std::move(cause));
    case Status::LeaseHeld: throw LeaseHeldError(std::move(e), std::move(cause));
    case Status::LeaseLost: throw LeaseLostError(std::move(e), std::move(cause));
    case Status::TokenExhausted: throw TokenExhaustedError(std::move(e), std::move(cause));
    case Status::InvalidArgument: throw InvalidArgumentError(std::move(e), std::move(cause));
    case Status::Timeout: throw TimeoutError(std::move(e), std::move(cause));
    case Status::Backend: throw BackendError(std::move(e), std::move(cause));
    case Status::Closed: throw ClosedError(std::move(e), std::move(cause));
    case Status::NullParameter: throw NullParameterError(std::move(e), std::move(cause));
    case Status::InvalidUtf8: throw InvalidUtf8Error(std::move(e), std::move(cause));
    case Status::BufferTooSmall: throw BufferTooSmallError(std::move(e), std::move(cause));
    case Status::Panic: throw PanicError(std::move(e), std::move(cause));
    case Status::Ok: break;
  }
  throw FencingError(std::move(e), std::move(cause));  // a code newer than this header
}

namespace detail {
template <class T>
T value_or_throw(Result<T> &&r) {
  if (!r.ok()) throw_error(r.error());
  return std::move(r).value();
}
}  // namespace detail

/// A lease held alive in the background until finish(), throwing the
/// exception class of each failure's code (see nothrow::LeaseGuard).
///
///   fencing::LeaseGuard lease = store.hold("report", "worker-a", 30000);
///   try {
///     lease.put("body", render());      // presents the lease's scope and token
///   } catch (...) {
///     lease.finish(std::current_exception());  // throws the loss or the work's error
///   }
///   lease.finish();  // throws LeaseLostError, ClosedError, ... when it was lost
///
/// The destructor of a guard not finished releases quietly and never throws.
class LeaseGuard {
 public:
  explicit LeaseGuard(nothrow::LeaseGuard g) noexcept : g_(std::move(g)) {}

  void check() const { detail::value_or_throw(g_.check()); }
  Lease lease() const { return detail::value_or_throw(g_.lease()); }
  std::uint64_t token() const { return detail::value_or_throw(g_.token()); }
  Receipt put(std::string_view key, const void *value, std::size_t len) const {
    return detail::value_or_throw(g_.put(key, value, len));
  }
  Receipt put(std::string_view key, std::string_view value) const { return detail::value_or_throw(g_.put(key, value)); }
  Receipt remove(std::string_view key) const { return detail::value_or_throw(g_.remove(key)); }
  std::optional<Entry> get(std::string_view key) const { return detail::value_or_throw(g_.get(key)); }
  void claim() const { detail::value_or_throw(g_.claim()); }

  /// The work succeeded: returns when the lease was held to the end and
  /// released; otherwise throws the loss.
  void finish() { detail::value_or_throw(g_.finish(false)); }

  /// The work failed with `work_error`: throws the loss, with `work_error`
  /// as its cause(), or, when the lease was released, `work_error` itself.
  [[noreturn]] void finish(std::exception_ptr work_error) {
    Result<std::monostate> verdict = g_.finish(true);
    if (verdict.ok() && work_error) std::rethrow_exception(work_error);
    if (verdict.ok()) throw std::invalid_argument("LeaseGuard::finish: work_error is null");
    throw_error(verdict.error(), verdict.error().work_error_is_cause ? work_error : nullptr);
  }

  /// The non-throwing calls on the same hold.
  const nothrow::LeaseGuard &nothrow() const noexcept { return g_; }
  const fencing_hold *handle() const noexcept { return g_.handle(); }

 private:
  nothrow::LeaseGuard g_;
};

/// The store, throwing the exception class of each failure's code.
/// Movable, not copyable; freed by its destructor.
class Store {
 public:
  static Store open(std::string_view url) { return Store(detail::value_or_throw(nothrow::Store::open(url))); }

  const fencing_store *handle() const noexcept { return s_.handle(); }
  /// The non-throwing calls on the same handle.
  const nothrow::Store &nothrow() const noexcept { return s_; }
  std::string location() const { return detail::value_or_throw(s_.location()); }

  std::uint64_t next_token(std::string_view scope) const { return detail::value_or_throw(s_.next_token(scope)); }
  std::uint64_t fence_of(std::string_view scope) const { return detail::value_or_throw(s_.fence_of(scope)); }
  Lease acquire(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms) const {
    return detail::value_or_throw(s_.acquire(scope, holder, ttl_ms));
  }
  Lease renew(std::string_view scope, std::uint64_t token, std::uint64_t ttl_ms) const {
    return detail::value_or_throw(s_.renew(scope, token, ttl_ms));
  }
  bool release(std::string_view scope, std::uint64_t token) const {
    return detail::value_or_throw(s_.release(scope, token));
  }
  Receipt put(std::string_view scope, std::string_view key, const void *value, std::size_t len,
              const Fence &fence) const {
    return detail::value_or_throw(s_.put(scope, key, value, len, fence));
  }
  Receipt put(std::string_view scope, std::string_view key, std::string_view value, const Fence &fence) const {
    return detail::value_or_throw(s_.put(scope, key, value, fence));
  }
  std::optional<Entry> get(std::string_view scope, std::string_view key,
                           const std::optional<Fence> &fence = std::nullopt) const {
    return detail::value_or_throw(s_.get(scope, key, fence));
  }
  LeaseGuard hold(std::string_view scope, std::string_view holder, std::uint64_t ttl_ms,
                  std::uint64_t timeout_ms = 0, LossCallback on_lost = nullptr) const {
    return LeaseGuard(detail::value_or_throw(s_.hold(scope, holder, ttl_ms, timeout_ms, std::move(on_lost))));
  }
  void close() const { detail::value_or_throw(s_.close()); }

 private:
  explicit Store(nothrow::Store s) noexcept : s_(std::move(s)) {}
  nothrow::Store s_;
};

#endif  // FENCING_HPP_EXCEPTIONS

}  // namespace fencing

#endif  // FENCING_HPP
