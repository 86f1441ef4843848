//! Python values to the core's types. Only conversions: a value of the wrong
//! Python type, or one that no core type can hold (a negative int, a NaN),
//! is `InvalidArgumentError` here; every range and size rule is the core's.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyFloat, PyInt, PyMemoryView, PyString, PyType};

use fencing::{Fence, Token};

use crate::errors::{invalid, IntoPyResult};

pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .qualname()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".to_owned())
}

/// `repr(obj)`, shortened: hostile input is echoed in messages.
fn short_repr(obj: &Bound<'_, PyAny>) -> String {
    const LIMIT: usize = 40;
    let text = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".to_owned());
    if text.len() <= LIMIT {
        return text;
    }
    let mut end = LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// An `int` (not a `bool`) as `u64`; `None` if negative or too large.
fn int_u64(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Option<u64>> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid(
            py,
            format!("{name} must be an int, got {}", type_name(obj)),
        ));
    }
    Ok(obj.extract::<u64>().ok())
}

/// A token: an `int` in `1..=MAX_TOKEN` (the range is the core's `Token`).
pub fn token(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Token> {
    // A Lease or a KeepAlive where its token goes: the fix is one attribute.
    if !obj.is_instance_of::<PyInt>() && obj.hasattr("token").unwrap_or(false) {
        return Err(invalid(
            py,
            format!(
                "{name} must be an int, got {}: pass lease.token",
                type_name(obj)
            ),
        ));
    }
    match int_u64(py, obj, name)? {
        Some(v) => Token::try_from_u64(v).py(py),
        None => Err(invalid(
            py,
            format!(
                "{name} {} is out of range 1..={}",
                short_repr(obj),
                Token::MAX.get()
            ),
        )),
    }
}

/// A non-negative `int` (seq, expected_version, limit); the core checks the
/// upper bound.
pub fn count(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    int_u64(py, obj, name)?.ok_or_else(|| {
        invalid(
            py,
            format!(
                "{name} {} is not a non-negative 64-bit int",
                short_repr(obj)
            ),
        )
    })
}

pub fn optional_count(
    py: Python<'_>,
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Option<u64>> {
    obj.map(|o| count(py, o, name)).transpose()
}

static TIMEDELTA: PyOnceLock<Py<PyType>> = PyOnceLock::new();

/// Seconds (`int` or `float`) or a `datetime.timedelta`, to microsecond
/// precision (the core keeps milliseconds and checks the range).
pub fn duration(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Duration> {
    let bad = |why: &str| invalid(py, format!("{name} {} {why}", short_repr(obj)));
    if obj.is_instance_of::<PyBool>() {
        return Err(invalid(py, format!("{name} must be seconds, got bool")));
    }
    if obj.is_instance_of::<PyInt>() {
        return match obj.extract::<u64>() {
            Ok(secs) => Ok(Duration::from_secs(secs)),
            Err(_) => Err(bad("is negative or too large")),
        };
    }
    if obj.is_instance_of::<PyFloat>() {
        let secs: f64 = obj.extract()?;
        return micros_f64(secs * 1e6).ok_or_else(|| bad("is negative, not finite or too large"));
    }
    let timedelta = TIMEDELTA.import(py, "datetime", "timedelta")?;
    if obj.is_instance(timedelta)? {
        // The fields themselves, through timedelta's own descriptors: a
        // subclass may define `days` (or the others) to be anything. The
        // limited API has no PyDateTime_DELTA_GET_DAYS.
        let field = |name: &str| -> PyResult<i64> {
            timedelta
                .getattr(name)?
                .call_method1("__get__", (obj,))?
                .extract()
        };
        let (days, seconds, micros) = (field("days")?, field("seconds")?, field("microseconds")?);
        // timedelta normalises: 0 <= seconds < 86400, 0 <= micros < 10**6,
        // and |days| <= 999999999, so this cannot overflow; checked anyway.
        let total = days
            .checked_mul(86_400)
            .and_then(|s| s.checked_add(seconds))
            .and_then(|s| s.checked_mul(1_000_000))
            .and_then(|us| us.checked_add(micros))
            .ok_or_else(|| bad("is too large"))?;
        return u64::try_from(total)
            .map(Duration::from_micros)
            .map_err(|_| bad("is negative"));
    }
    Err(invalid(
        py,
        format!(
            "{name} must be seconds (int or float) or a datetime.timedelta, got {}",
            type_name(obj)
        ),
    ))
}

/// A lease TTL: [`duration`], then the core's bounds (`limits::ttl`) checked
/// here too, so that the message speaks Python's unit (seconds) rather than
/// the core's `Duration` debug form ("0ns", "1ms").
pub fn ttl(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Duration> {
    let ttl = duration(py, obj, "ttl")?;
    if fencing::limits::ttl(ttl).is_err() {
        return Err(invalid(
            py,
            format!(
                "ttl {} is outside {}..={} seconds",
                short_repr(obj),
                seconds(fencing::limits::MIN_TTL),
                seconds(fencing::limits::MAX_TTL)
            ),
        ));
    }
    Ok(ttl)
}

/// Seconds as Python would print them: `0.001`, `31622400`.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        d.as_secs().to_string()
    } else {
        format!("{}", d.as_secs_f64())
    }
}

fn micros_f64(micros: f64) -> Option<Duration> {
    let micros = micros.round();
    // `u64::MAX as f64` rounds up to 2^64, so `<` keeps the cast exact.
    (micros.is_finite() && micros >= 0.0 && micros < u64::MAX as f64)
        .then(|| Duration::from_micros(micros as u64))
}

/// A `str` (scope, key, holder), as UTF-8 the core can borrow without the
/// GIL. A lone surrogate cannot be UTF-8: `InvalidArgumentError`.
pub fn text(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<PyBackedStr> {
    let s = obj
        .cast::<PyString>()
        .map_err(|_| invalid(py, format!("{name} must be a str, got {}", type_name(obj))))?;
    PyBackedStr::try_from(s.clone())
        .map_err(|_| invalid(py, format!("{name} is not valid UTF-8 (lone surrogate)")))
}

pub fn optional_text(
    py: Python<'_>,
    obj: Option<&Bound<'_, PyAny>>,
    name: &str,
) -> PyResult<Option<PyBackedStr>> {
    obj.map(|o| text(py, o, name)).transpose()
}

/// A bytes-like value: `bytes` (borrowed), `bytearray`, `memoryview` or any
/// other object with the buffer protocol (copied). `str` is refused: values
/// are bytes, encode text first.
pub fn bytes(py: Python<'_>, obj: &Bound<'_, PyAny>, name: &str) -> PyResult<PyBackedBytes> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(PyBackedBytes::from(b.clone()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(PyBackedBytes::from(b.clone()));
    }
    let refuse = || {
        invalid(
            py,
            format!("{name} must be bytes-like, got {}", type_name(obj)),
        )
    };
    if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyInt>() {
        return Err(refuse());
    }
    let view = PyMemoryView::from(obj).map_err(|_| refuse())?;
    let copy = view.call_method0("tobytes")?;
    let copy = copy.cast_into::<PyBytes>().map_err(|_| refuse())?;
    Ok(PyBackedBytes::from(copy))
}

/// What a write presents: token, optional seq and holder.
pub fn fence(
    py: Python<'_>,
    token: &Bound<'_, PyAny>,
    seq: Option<&Bound<'_, PyAny>>,
    holder: Option<&Bound<'_, PyAny>>,
) -> PyResult<Fence> {
    let mut fence = Fence::new(self::token(py, token, "token")?);
    fence.seq = optional_count(py, seq, "seq")?;
    fence.holder = optional_text(py, holder, "holder")?.map(|h| String::from(&*h));
    Ok(fence)
}

/// A `datetime.datetime` in UTC for a wall-clock time.
pub fn datetime<'py>(py: Python<'py>, at: SystemTime) -> PyResult<Bound<'py, PyAny>> {
    static EPOCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let epoch = EPOCH.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        let dt = py.import("datetime")?;
        let utc = dt.getattr("timezone")?.getattr("utc")?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("tzinfo", utc)?;
        Ok(dt
            .getattr("datetime")?
            .call((1970, 1, 1), Some(&kwargs))?
            .unbind())
    })?;
    let timedelta = TIMEDELTA.import(py, "datetime", "timedelta")?;
    let (sign, offset) = match at.duration_since(UNIX_EPOCH) {
        Ok(d) => (1i64, d),
        Err(e) => (-1i64, e.duration()),
    };
    let secs = i64::try_from(offset.as_secs()).unwrap_or(i64::MAX);
    let micros = i64::from(offset.subsec_micros());
    let delta = timedelta.call1((0, sign * secs, sign * micros))?;
    epoch.bind(py).add(delta)
}
