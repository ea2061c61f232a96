//! An object's JSON as CEL sees it, typed by its schema as upstream's `UnstructuredToVal` types
//! it: a `number` is a double even when written `3`, a `date-time` string a timestamp, a
//! `duration` string a duration, a `byte` string bytes; objects are maps of their fields.

use std::collections::HashMap;
use std::sync::Arc;

use base64::Engine;
use kube_cel::cel::Value as Cel;
use serde_json::Value;

use super::Schema;

/// `v` as CEL sees it under `node` (`None`: a value no schema types); `root` keeps only
/// `apiVersion`, `kind` and the `metadata.name` and `generateName` a rule at a resource's root
/// may read.
pub(crate) fn to_cel<S: Schema>(v: &Value, node: Option<&S>, root: bool) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => {
            if node.is_some_and(|n| n.type_name() == "number") {
                Cel::Float(n.as_f64().unwrap_or_default())
            } else if let Some(i) = n.as_i64() {
                Cel::Int(i)
            } else if let Some(u) = n.as_u64() {
                Cel::UInt(u)
            } else {
                Cel::Float(n.as_f64().unwrap_or_default())
            }
        }
        Value::String(s) => string(s, node.map_or("", Schema::format)),
        Value::Array(items) => {
            let item = node.and_then(Schema::items);
            Cel::List(Arc::new(items.iter().map(|i| to_cel(i, item, false)).collect()))
        }
        Value::Object(fields) => {
            let mut map: HashMap<String, Cel> = HashMap::with_capacity(fields.len());
            for (k, field) in fields {
                if root && k == "metadata" {
                    let meta = field.as_object().map(|m| {
                        m.iter()
                            .filter(|(k, _)| *k == "name" || *k == "generateName")
                            .map(|(k, v)| (k.clone(), to_cel::<S>(v, None, false)))
                            .collect::<HashMap<String, Cel>>()
                    });
                    map.insert(k.clone(), meta.unwrap_or_default().into());
                    continue;
                }
                map.insert(k.clone(), to_cel(field, node.and_then(|n| n.field(k)), false));
            }
            map.into()
        }
    }
}

/// A string of `format`.
fn string(s: &str, format: &str) -> Cel {
    match format {
        "date-time" => {
            if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
                return Cel::Timestamp(t);
            }
        }
        "duration" => {
            if let Ok(d) = s.parse::<jiff::SignedDuration>()
                && let Ok(nanos) = i64::try_from(d.as_nanos())
            {
                return Cel::Duration(chrono::Duration::nanoseconds(nanos));
            }
        }
        "byte" => {
            if let Ok(b) = base64::engine::general_purpose::STANDARD.decode(s) {
                return Cel::Bytes(Arc::new(b));
            }
        }
        _ => {}
    }
    Cel::String(Arc::new(s.to_owned()))
}
