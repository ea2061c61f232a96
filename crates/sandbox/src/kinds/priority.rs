//! scheduling.k8s.io/v1 PriorityClasses: the two system classes every cluster has, upstream's
//! defaults and validation (`pkg/apis/scheduling/validation`).

use serde_json::{Value, json};

use crate::object_meta::set_default;
use crate::status::FieldError;

/// The highest value a user-defined class may have.
const HIGHEST_USER_DEFINABLE: i64 = 1_000_000_000;

/// The system classes (`scheduling.SystemPriorityClasses`): name, value, description.
pub const SYSTEM_CLASSES: [(&str, i64, &str); 2] = [
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// The system classes as objects to create at start-up.
#[must_use]
pub fn system_classes() -> Vec<Value> {
    SYSTEM_CLASSES
        .iter()
        .map(|(name, value, description)| json!({ "metadata": { "name": name }, "value": value, "description": description }))
        .collect()
}

/// A class preempts lower priorities unless told not to.
pub fn default(pc: &mut Value) {
    if let Some(o) = pc.as_object_mut() {
        set_default(o, "preemptionPolicy", json!("PreemptLowerPriority"));
        // `value` is an int32 Go writes even when zero.
        set_default(o, "value", json!(0));
    }
}

/// `system-` names are the system classes' alone; a user's class is at most 10⁹; the value
/// and the preemption policy never change. An update is held to the last rule alone, as
/// upstream's `ValidatePriorityClassUpdate`.
pub fn validate(pc: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(old) = old {
        if pc.get("value") != old.get("value") {
            errs.push(("value".into(), "Forbidden: may not be changed in an update.".into()));
        }
        if pc.get("preemptionPolicy") != old.get("preemptionPolicy") {
            let shown =
                pc.get("preemptionPolicy").map_or_else(|| "\"null\"".to_owned(), crate::go_print::bad_value);
            errs.push(("preemptionPolicy".into(), format!("Invalid value: {shown}: field is immutable")));
        }
        return errs;
    }
    let name = crate::object_meta::meta_str(pc, "name");
    let value = pc.get("value").and_then(Value::as_i64).unwrap_or(0);
    if name.starts_with("system-") {
        match SYSTEM_CLASSES.iter().find(|(n, ..)| *n == name) {
            Some((_, v, _)) if *v == value && pc.get("globalDefault").and_then(Value::as_bool) != Some(true) => {}
            Some((_, v, _)) if *v == value => errs.push((
                "metadata.name".into(),
                format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: globalDefault of {name} PriorityClass must be false"),
            )),
            Some((_, v, _)) => errs.push((
                "metadata.name".into(),
                format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: value of {name} PriorityClass must be {v}"),
            )),
            None => errs.push((
                "metadata.name".into(),
                format!("Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {name} is not a known system priority class"),
            )),
        }
    } else if value > HIGHEST_USER_DEFINABLE {
        errs.push((
            "value".into(),
            format!(
                "Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE}"
            ),
        ));
    }
    // `ValidatePreemptionPolicy`.
    match pc.get("preemptionPolicy").and_then(Value::as_str) {
        Some("") => errs.push(("preemptionPolicy".into(), "Required value".into())),
        Some(p) if !matches!(p, "PreemptLowerPriority" | "Never") => {
            errs.push(crate::field_errors::not_supported(
                "preemptionPolicy",
                p,
                &["PreemptLowerPriority", "Never"],
            ));
        }
        _ => {}
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_names_are_reserved() {
        for class in system_classes() {
            assert!(validate(&class, None).is_empty());
        }
        let fake = json!({ "metadata": { "name": "system-mine" }, "value": 5 });
        assert_eq!(validate(&fake, None)[0].0, "metadata.name");
        let high = json!({ "metadata": { "name": "high" }, "value": 2_000_000_000_i64 });
        assert_eq!(validate(&high, None)[0].0, "value");
    }
}
