//! `ip -j` listings as the mirror tests compare them: one JSON document per line, arrays as
//! multisets (dump order is not part of the contract).
use serde_json::Value;

/// Sorts every array, recursively.
pub fn normalise(v: &mut Value) {
    match v {
        Value::Array(items) => {
            items.iter_mut().for_each(normalise);
            items.sort_by_key(|i| i.to_string());
        }
        Value::Object(m) => m.iter_mut().for_each(|(_, x)| normalise(x)),
        _ => {}
    }
}

/// Each non-empty line of `text` as a document, after `adjust`, normalised.
pub fn documents_with(text: &str, adjust: impl Fn(&mut Value)) -> Vec<Value> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).expect("JSON");
            adjust(&mut v);
            normalise(&mut v);
            v
        })
        .collect()
}
