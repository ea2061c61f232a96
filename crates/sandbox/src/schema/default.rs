//! Defaulting, as upstream's `defaulting/algorithm.go` (`Default`): in every object, a property
//! with a `default` that is absent — or `null` where the property is not `nullable` — gets a
//! copy of the default; then every field is defaulted by its own schema, map values
//! (`additionalProperties`) and array items included, a non-nullable `null` map value or item
//! replaced by its schema's default. Defaults are applied top-down, so a default object is itself
//! defaulted further.

use serde_json::Value;

use super::node::Node;

/// Whether `x` is a `null` the schema does not allow.
fn non_nullable_null(x: &Value, s: &Node) -> bool {
    x.is_null() && !s.nullable
}

/// `defaulting.Default`.
pub(crate) fn default(x: &mut Value, s: &Node) {
    match x {
        Value::Object(map) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else { continue };
                match map.get_mut(k) {
                    None => {
                        map.insert(k.clone(), d.clone());
                    }
                    Some(v) if non_nullable_null(v, prop) => *v = d.clone(),
                    Some(_) => {}
                }
            }
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.properties.get(k) {
                    default(v, prop);
                } else if let Some(values) = s.additional_schema() {
                    if non_nullable_null(v, values) {
                        // Upstream copies the default, nil when there is none.
                        *v = values.default.clone().unwrap_or(Value::Null);
                    }
                    default(v, values);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items.as_deref() else { return };
            for v in items {
                if non_nullable_null(v, item_schema) {
                    *v = item_schema.default.clone().unwrap_or(Value::Null);
                }
                default(v, item_schema);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    //! Follows `defaulting/algorithm_test.go`.
    use serde_json::json;

    use super::super::Structural;

    fn defaulted(schema: serde_json::Value, mut obj: serde_json::Value) -> serde_json::Value {
        Structural::parse(&schema).default(&mut obj);
        obj
    }

    #[test]
    fn absent_fields_get_their_default_recursively() {
        let schema = json!({"type": "object", "properties": {"spec": {
            "type": "object", "default": {},
            "properties": {
                "size": {"type": "integer", "default": 3},
                "mode": {"type": "string", "default": "fast"},
                "inner": {"type": "object", "default": {}, "properties": {"x": {"type": "string", "default": "y"}}}}}}});
        assert_eq!(
            defaulted(schema.clone(), json!({})),
            json!({"spec": {"size": 3, "mode": "fast", "inner": {"x": "y"}}})
        );
        assert_eq!(
            defaulted(schema, json!({"spec": {"size": 5}})),
            json!({"spec": {"size": 5, "mode": "fast", "inner": {"x": "y"}}})
        );
    }

    #[test]
    fn nulls_are_defaulted_unless_nullable() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string", "default": "d"},
            "b": {"type": "string", "nullable": true, "default": "d"}}});
        assert_eq!(defaulted(schema, json!({"a": null, "b": null})), json!({"a": "d", "b": null}));
    }

    #[test]
    fn items_and_map_values_are_defaulted() {
        let schema = json!({"type": "object", "properties": {
            "list": {"type": "array", "items": {"type": "object", "properties": {"p": {"type": "integer", "default": 80}}}},
            "nulls": {"type": "array", "items": {"type": "string", "default": "z"}},
            "map": {"type": "object", "additionalProperties": {"type": "object", "properties": {"q": {"type": "boolean", "default": true}}}}}});
        assert_eq!(
            defaulted(schema, json!({"list": [{}, {"p": 1}], "nulls": [null, "a"], "map": {"k": {}}})),
            json!({"list": [{"p": 80}, {"p": 1}], "nulls": ["z", "a"], "map": {"k": {"q": true}}})
        );
    }
}
