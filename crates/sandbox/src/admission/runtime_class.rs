//! RuntimeClass (`plugin/pkg/admission/runtimeclass`): a pod naming a RuntimeClass gets the
//! class's overhead and scheduling (node selector, tolerations); a class that does not exist, an
//! overhead that is not the class's, or a node selector that contradicts it is a 403, and so is
//! an overhead set without a class that defines one.

use serde_json::{Value, json};

use super::{Effects, Operation, Plugin, Request, is_core, spec};
use crate::object_meta::meta_str;
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct RuntimeClass;

/// The class a pod names, if it names one; a 403 if it does not exist.
fn class_of(req: &Request<'_>, pod: &Value) -> Result<Option<std::sync::Arc<Value>>, ApiError> {
    let Some(name) = pod.pointer("/spec/runtimeClassName").and_then(Value::as_str) else { return Ok(None) };
    let classes = crate::catalog::find("node.k8s.io", "v1", "runtimeclasses").expect("runtimeclasses");
    match req.objects.get(classes, "", name) {
        Some(c) => Ok(Some(c)),
        None => Err(refuse(pod, &format!("pod rejected: RuntimeClass {name:?} not found"))),
    }
}

fn refuse(pod: &Value, why: &str) -> ApiError {
    ApiError::admission_forbidden("", "pods", meta_str(pod, "name"), why)
}

impl Plugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, req: &Request<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let Some(class) = class_of(req, pod)? else { return Ok(()) };
        if let Some(fixed) = class.pointer("/overhead/podFixed").filter(|o| !o.is_null()) {
            if pod.pointer("/spec/overhead").is_some_and(|o| !o.is_null() && o != fixed) {
                return Err(refuse(
                    pod,
                    "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                ));
            }
            spec(pod).insert("overhead".into(), fixed.clone());
        }
        let Some(scheduling) = class.get("scheduling").filter(|s| !s.is_null()) else { return Ok(()) };
        let mut selector =
            pod.pointer("/spec/nodeSelector").and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, value) in scheduling.get("nodeSelector").and_then(Value::as_object).into_iter().flatten() {
            match selector.get(key) {
                Some(own) if own != value => {
                    let text = |v: &Value| v.as_str().unwrap_or("").to_owned();
                    return Err(refuse(
                        pod,
                        &format!(
                            "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                            text(value),
                            text(own)
                        ),
                    ));
                }
                _ => {
                    selector.insert(key.clone(), value.clone());
                }
            }
        }
        let mut tolerations =
            pod.pointer("/spec/tolerations").and_then(Value::as_array).cloned().unwrap_or_default();
        for t in scheduling.get("tolerations").and_then(Value::as_array).into_iter().flatten() {
            if !tolerations.contains(t) {
                tolerations.push(t.clone());
            }
        }
        let s = spec(pod);
        if !selector.is_empty() {
            s.insert("nodeSelector".into(), Value::Object(selector));
        }
        if !tolerations.is_empty() {
            s.insert("tolerations".into(), json!(tolerations));
        }
        Ok(())
    }

    fn validate(&self, req: &Request<'_>, pod: &Value, _effects: &mut Effects) -> Result<(), ApiError> {
        if pod.pointer("/spec/overhead").is_none_or(Value::is_null) {
            return Ok(());
        }
        let class = class_of(req, pod)?;
        if class.as_ref().is_none_or(|c| c.pointer("/overhead/podFixed").is_none_or(Value::is_null)) {
            return Err(refuse(
                pod,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            ));
        }
        Ok(())
    }
}
