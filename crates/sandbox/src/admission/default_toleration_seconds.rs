//! DefaultTolerationSeconds (`plugin/pkg/admission/defaulttolerationseconds`): a pod tolerates
//! not-ready and unreachable nodes for five minutes unless it says otherwise.

use serde_json::{Value, json};

use super::{Operation, Plugin, Request, is_core, spec};
use crate::resource::ResourceDef;
use crate::status::ApiError;

/// The plugin.
pub(crate) struct DefaultTolerationSeconds;

impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }

    fn handles(&self, op: Operation, def: &ResourceDef) -> bool {
        op == Operation::Create && is_core(def, "pods")
    }

    fn mutates(&self) -> bool {
        true
    }

    fn admit(&self, _: &Request<'_>, pod: &mut Value) -> Result<(), ApiError> {
        let tolerations = spec(pod).entry("tolerations").or_insert_with(|| json!([]));
        let Some(list) = tolerations.as_array_mut() else { return Ok(()) };
        for key in ["node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"] {
            let tolerated = list.iter().any(|t| {
                (t["key"] == key || (t.get("key").is_none_or(|k| k == "") && t["operator"] == "Exists"))
                    && t.get("effect").is_none_or(|e| e == "NoExecute" || e == "")
            });
            if !tolerated {
                list.push(
                    json!({ "key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300 }),
                );
            }
        }
        Ok(())
    }
}
