//! node.k8s.io/v1 RuntimeClasses (`pkg/apis/node/validation`): the handler a DNS label fixed
//! once set, the pod overhead as a container's limits, the scheduling constraints as a pod's
//! node selector labels and tolerations (each toleration once).

use serde_json::Value;

use crate::field_errors::invalid_str;
use crate::go_print::go_quote;
use crate::status::FieldError;

use super::crd::str_at;

/// `ValidateRuntimeClass`, then on update `ValidateRuntimeClassUpdate` (the handler is fixed).
pub fn validate(rc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let handler = str_at(rc, "handler");
    let mut errs = crate::names::label_field("handler", handler);
    if let Some(overhead) = rc.get("overhead").filter(|o| !o.is_null()) {
        let limits =
            serde_json::json!({ "limits": overhead.get("podFixed").cloned().unwrap_or(Value::Null) });
        errs.extend(super::pod::container_resources(&limits, "overhead"));
    }
    if let Some(scheduling) = rc.get("scheduling").filter(|s| !s.is_null()) {
        if let Some(sel) = scheduling.get("nodeSelector").filter(|s| !s.is_null()) {
            errs.extend(crate::label_rules::label_map_errors(Some(sel), "scheduling.nodeSelector"));
        }
        let list = scheduling.get("tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        errs.extend(super::pod::scheduling::tolerations(&list, "scheduling.tolerations"));
        errs.extend(duplicate_tolerations(&list));
    }
    if let Some(old) = old
        && str_at(old, "handler") != handler
    {
        errs.push(invalid_str("handler", handler, "field is immutable"));
    }
    errs
}

/// A toleration listed twice (by key, operator, value and effect), printed as Go's `%#v` of the
/// internal `core.Toleration` (a `tolerationSeconds` is a pointer: Go prints its address).
fn duplicate_tolerations(list: &[Value]) -> Vec<FieldError> {
    let mut seen = std::collections::HashSet::new();
    let mut errs = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let key = ["key", "operator", "value", "effect"].map(|k| str_at(t, k));
        if seen.insert(key) {
            continue;
        }
        let seconds = if t.get("tolerationSeconds").is_some_and(|s| !s.is_null()) {
            "(*int64)(…)"
        } else {
            "(*int64)(nil)"
        };
        let [k, op, v, effect] = key.map(go_quote);
        errs.push((
            format!("scheduling.tolerations[{i}]"),
            format!(
                "Duplicate value: core.Toleration{{Key:{k}, Operator:{op}, Value:{v}, Effect:{effect}, TolerationSeconds:{seconds}}}"
            ),
        ));
    }
    errs
}
