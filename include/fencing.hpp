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
// Not here yet: a lease holder that renews in the background (it builds on
// the C keep-alive handle, which is being added to fencing.h).
#ifndef FENCING_HPP
#define FENCING_HPP

#include "fencing.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#define FENCING_HPP_EXCEPTIONS 1
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
  std::optional<std::string> holder;  // LEASE_LOST: nullopt when no lease is live
  std::uint64_t presented = 0;
  std::uint64_t current = 0;
  std::uint64_t last = 0;
  std::uint64_t expected = 0;
  std::uint64_t actual = 0;
  std::uint64_t token = 0;
  std::uint64_t remaining_ms = 0;
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

namespace nothrow {

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
  explicit FencingError(Error e) : std::runtime_error(e.message), e_(std::move(e)) {}
  Status status() const noexcept { return e_.status; }
  const Error &error() const noexcept { return e_; }

 private:
  Error e_;
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
  /// The live lease's holder and token now; nullopt and 0 when none is live.
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

/// Throws the exception class of `e.status`.
[[noreturn]] inline void throw_error(Error e) {
  switch (e.status) {
    case Status::StaleToken: throw StaleTokenError(std::move(e));
    case Status::SequenceOutOfOrder: throw SequenceOutOfOrderError(std::move(e));
    case Status::VersionMismatch: throw VersionMismatchError(std::move(e));
    case Status::NotFound: throw NotFoundError(std::move(e));
    case Status::LeaseHeld: throw LeaseHeldError(std::move(e));
    case Status::LeaseLost: throw LeaseLostError(std::move(e));
    case Status::TokenExhausted: throw TokenExhaustedError(std::move(e));
    case Status::InvalidArgument: throw InvalidArgumentError(std::move(e));
    case Status::Timeout: throw TimeoutError(std::move(e));
    case Status::Backend: throw BackendError(std::move(e));
    case Status::Closed: throw ClosedError(std::move(e));
    case Status::NullParameter: throw NullParameterError(std::move(e));
    case Status::InvalidUtf8: throw InvalidUtf8Error(std::move(e));
    case Status::BufferTooSmall: throw BufferTooSmallError(std::move(e));
    case Status::Panic: throw PanicError(std::move(e));
    case Status::Ok: break;
  }
  throw FencingError(std::move(e));  // a code newer than this header
}

namespace detail {
template <class T>
T value_or_throw(Result<T> &&r) {
  if (!r.ok()) throw_error(r.error());
  return std::move(r).value();
}
}  // namespace detail

/// The store, throwing the exception class of each failure's code.
/// Movable, not copyable; freed by its destructor.
class Store {
 public:
  static Store open(std::string_view url) { return Store(detail::value_or_throw(nothrow::Store::open(url))); }

  const fencing_store *handle() const noexcept { return s_.handle(); }
  /// The non-throwing calls on the same handle.
  const nothrow::Store &nothrow() const noexcept { return s_; }

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
  void close() const { detail::value_or_throw(s_.close()); }

 private:
  explicit Store(nothrow::Store s) noexcept : s_(std::move(s)) {}
  nothrow::Store s_;
};

#endif  // FENCING_HPP_EXCEPTIONS

}  // namespace fencing

#endif  // FENCING_HPP
