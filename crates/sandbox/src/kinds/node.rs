//! v1 Nodes: what the API server fills in for a registered node (`SetDefaults_NodeStatus`:
//! allocatable is the capacity when the kubelet reports none), and its taints' rules.

use serde_json::Value;

use crate::status::FieldError;

/// Each taint has a qualified key and a known effect (`validateNodeTaints`; upstream names the
/// field `metadata.taints`, and so does this).
pub fn validate(node: &Value, _old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, t) in node.pointer("/spec/taints").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let key = t.get("key").and_then(Value::as_str).unwrap_or("");
        for why in crate::metadata::qualified_name_errors(key) {
            errs.push((format!("metadata.taints[{i}].key"), format!("Invalid value: {key:?}: {why}")));
        }
        match t.get("effect").and_then(Value::as_str).unwrap_or("") {
            "NoSchedule" | "PreferNoSchedule" | "NoExecute" => {}
            "" => errs.push((format!("metadata.taints[{i}].effect"), "Required value".into())),
            e => errs.push((
                format!("metadata.taints[{i}].effect"),
                format!("Unsupported value: {e:?}: supported values: \"NoSchedule\", \"PreferNoSchedule\", \"NoExecute\""),
            )),
        }
    }
    errs
}

/// A node's defaults.
pub fn default(node: &mut Value) {
    let Some(status) = node.get_mut("status").and_then(Value::as_object_mut) else { return };
    if status.get("allocatable").is_none_or(Value::is_null)
        && let Some(capacity) = status.get("capacity").cloned()
    {
        status.insert("allocatable".into(), capacity);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn allocatable_defaults_to_capacity() {
        let mut node = json!({ "status": { "capacity": { "cpu": "4" } } });
        super::default(&mut node);
        assert_eq!(node["status"]["allocatable"], json!({ "cpu": "4" }));
    }
}
