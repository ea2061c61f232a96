//! v1 Nodes: what the API server fills in for a registered node (`SetDefaults_NodeStatus`:
//! allocatable is the capacity when the kubelet reports none).

use serde_json::Value;

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
