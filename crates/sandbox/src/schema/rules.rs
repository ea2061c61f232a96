//! The walk of an object to every schema node with CEL rules, beside the stored object it
//! replaces: a field's old value is the old object's same field, a map value's the old map's
//! same key, a list item's the old list's item with the same keys (`x-kubernetes-list-type:
//! map`) or the same value (`set`); an item of another list has no old value, as upstream
//! correlates it (`validateArray`, `validateMap`).

use serde_json::Value;

use super::node::Node;
use crate::status::FieldError;

/// Checks `obj` at `at` against `node`'s rules and everything under it, their evaluations'
/// costs taken from `budget` (none is run once it is negative).
pub(super) fn walk(
    node: &Node,
    at: &str,
    obj: &Value,
    old: Option<&Value>,
    root: bool,
    budget: &mut i64,
    errs: &mut Vec<FieldError>,
) {
    if !node.has_rules || *budget < 0 {
        return;
    }
    if let Some(rules) = &node.rules {
        errs.extend(rules.check(at, node, obj, old, root, budget));
    }
    match obj {
        Value::Object(fields) => {
            for (k, v) in fields {
                let Some(sub) = node.field(k) else { continue };
                let keyed = node.properties.contains_key(k);
                let path = match (at.is_empty(), keyed) {
                    (true, true) => k.clone(),
                    (false, true) => format!("{at}.{k}"),
                    (_, false) => format!("{at}[{k}]"),
                };
                walk(sub, &path, v, old.and_then(|o| o.get(k)), false, budget, errs);
            }
        }
        Value::Array(items) => {
            let Some(item) = node.items.as_deref() else { return };
            let old_items = old.and_then(Value::as_array);
            for (i, v) in items.iter().enumerate() {
                let before = old_items.and_then(|olds| correlated(node, v, olds));
                walk(item, &format!("{at}[{i}]"), v, before, false, budget, errs);
            }
        }
        _ => {}
    }
}

/// The old list's item `item` stands for, where the list's type correlates items.
fn correlated<'a>(node: &Node, item: &Value, olds: &'a [Value]) -> Option<&'a Value> {
    match node.list_type.as_deref() {
        Some("map") => {
            let keys = &node.list_map_keys;
            olds.iter().find(|o| keys.iter().all(|k| o.get(k) == item.get(k)))
        }
        Some("set") => olds.iter().find(|o| *o == item),
        _ => None,
    }
}
