//! The ops of `fencing apply`: a JSON array in the form the shared scenario
//! files use (tests/scenarios/README.md), `{"put": KEY, "value": TEXT}` and
//! `{"delete": KEY}`, each with an optional `"expected_version"`.

use fencing::Op;
use serde_json::{Map, Value};

use crate::exit::Failure;

const FORM: &str = r#"[{"put": KEY, "value": TEXT}, {"delete": KEY}, ...], each with an optional "expected_version""#;

/// The ops in `doc`, in order; the first malformed one is INVALID_ARGUMENT,
/// named by its place.
pub fn ops(doc: &[u8]) -> Result<Vec<Op>, Failure> {
    let doc: Value = serde_json::from_slice(doc)
        .map_err(|e| Failure::invalid(format!("the ops are not JSON ({e}); expected {FORM}")))?;
    let Value::Array(items) = doc else {
        return Err(Failure::invalid(format!(
            "the ops must be a JSON array: {FORM}"
        )));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            match item {
                Value::Object(fields) => op(fields),
                _ => Err(format!("is not a JSON object; expected {FORM}")),
            }
            .map_err(|why| Failure::invalid(format!("op {i} {why}")))
        })
        .collect()
}

fn op(fields: &Map<String, Value>) -> Result<Op, String> {
    const KNOWN: [&str; 4] = ["put", "delete", "value", "expected_version"];
    if let Some(unknown) = fields.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("has an unknown field {unknown:?}"));
    }
    let text = |name| fields.get(name).map(|v| v.as_str().ok_or(v));
    let op = match (text("put"), text("delete"), text("value")) {
        (Some(Ok(key)), None, Some(Ok(value))) => Op::put(key, value.as_bytes()),
        (None, Some(Ok(key)), None) => Op::delete(key),
        _ => {
            return Err(format!(
                "is neither of {FORM} (keys and values are strings)"
            ))
        }
    };
    match fields.get("expected_version") {
        None => Ok(op),
        Some(Value::String(v)) => match fencing::parse_token_value(v) {
            Ok(v) => Ok(op.if_version(v)),
            Err(_) => Err(format!(
                "has expected_version {v:?}: not canonical decimal in 0..={}",
                fencing::Token::MAX
            )),
        },
        Some(other) => Err(format!(
            "has expected_version {other}: a version is canonical decimal text, like \"3\""
        )),
    }
}
