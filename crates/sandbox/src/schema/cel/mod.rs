//! CEL validation rules (`x-kubernetes-validations`) of a custom resource's schema, as
//! apiextensions-apiserver compiles and evaluates them (`pkg/apiserver/schema/cel`): each rule
//! is compiled once with its schema; on every create and update it is evaluated at each value
//! its schema node validates, with `self` the value and `oldSelf` the stored object's value at
//! the same place (a transition rule — one that reads `oldSelf` — is evaluated only where there
//! is one, unless `optionalOldSelf` makes `oldSelf` an optional).
//!
//! A rule that is false is a field error at its node (or its `fieldPath`), worded by its
//! `messageExpression`, else its `message`, else `failed rule: <rule>`, and typed by its
//! `reason`. A rule that fails to evaluate (`no such key`, a division by zero) is a field error
//! naming the evaluation's error, as upstream's.
//!
//! The environment is CEL's standard library and the Kubernetes libraries as kube-rs's
//! `kube-cel` implements them (`k8s.io/apiserver/pkg/cel/library` and cel-go's extensions:
//! strings, lists, sets, regex, URLs, IPs and CIDRs, quantities, semver, format, math). It is
//! upstream's but in one way: rules are parsed, their field selections and operators checked
//! against the schema's types ([`check`]: a field the schema lacks, or `==` between an int and
//! a string, refuses the CRD, as upstream) and their cost estimated as cel-go estimates it
//! ([`cost`], over the sizes the schema bounds: [`size`]); of functions, only the common ones'
//! overloads are checked (`size`, `matches`, the string methods: another's wrong overload is an
//! error when the rule runs, not when the CRD is written). Each evaluation's cost is counted as cel-go's tracker counts it
//! ([`mod@actual_cost`]): one is stopped past 1,000,000, and an object's rules share 10,000,000.

mod actual_cost;
pub(crate) mod authz;
mod check;
mod cost;
mod regex;
mod size;
pub(crate) mod value;

pub(crate) use actual_cost::{Spent, actual_cost};
pub(crate) use check::RESERVED;
pub(crate) use size::{max_cardinality, max_children};

use std::sync::{Arc, OnceLock};

use kube_cel::KubeCelExt;
use kube_cel::cel::{self, Context, ExecutionError, Program, Value as Cel};
use serde_json::{Map, Value};

use crate::go_print::go_quote;
use crate::status::FieldError;

/// The context every rule (and every admission policy's expression) is evaluated in: its
/// functions, registered once; each evaluation binds its variables in a scope of its own.
pub(crate) fn functions() -> &'static Context<'static> {
    static ROOT: OnceLock<Context<'static>> = OnceLock::new();
    ROOT.get_or_init(|| {
        let mut root = Context::default();
        root.register_all();
        regex::register(&mut root);
        authz::register(&mut root);
        root
    })
}

/// Compiles a rule or message expression; the compiler's issues as cel-go prints them
/// (`ERROR: <input>:1:4: Syntax error: …`).
pub(crate) fn compile(text: &str) -> Result<Program, String> {
    Program::compile(text).map_err(|e| e.to_string())
}

/// Checks a rule or message expression as a CRD's write does, `schema` its node (`root`: a
/// resource's root or an embedded resource; `old_self`: `oldSelf` has the node's type, it is
/// not optional): it parses and selects only declared fields (else cel-go's compiler errors),
/// and the most it can cost, as cel-go estimates it (see [`cost`]).
pub(crate) fn estimated_cost(
    text: &str,
    schema: &Map<String, Value>,
    root: bool,
    old_self: bool,
) -> Result<u64, String> {
    let program = compile(text)?;
    let checked = check::check(text, program.expression(), schema, root, old_self);
    if let Some(errors) = &checked.errors {
        return Err(errors.clone());
    }
    Ok(cost::estimate(&checked).max)
}

/// The type errors of an expression whose `variables` are resources of the schemas given (or
/// anything, for `None`), as cel-go's compiler prints them (an admission policy's type
/// checking); `None` when it has none this checker finds.
pub(crate) fn type_errors(text: &str, variables: &[(&str, Option<&Map<String, Value>>)]) -> Option<String> {
    let program = match compile(text) {
        Ok(p) => p,
        Err(e) => return Some(e),
    };
    check::check_variables(text, program.expression(), variables).errors
}

/// What CEL reads of a schema node: its type, its format, and the nodes under it.
pub(crate) trait Schema {
    /// Its one `type`, or `""` (none, or int-or-string's two).
    fn type_name(&self) -> &str;
    /// Its `format`, or `""`.
    fn format(&self) -> &str;
    /// The node of an object's field `key` (its property, or the map values').
    fn field(&self, key: &str) -> Option<&Self>;
    /// The node of a list's items.
    fn items(&self) -> Option<&Self>;
}

/// The compiled rules of one schema node.
pub(crate) struct Rules(Vec<Rule>);

impl std::fmt::Debug for Rules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.iter().map(|r| &r.text)).finish()
    }
}

/// One rule, compiled.
struct Rule {
    text: String,
    program: Result<Program, String>,
    message: String,
    message_expression: Option<Program>,
    message_expression_text: String,
    reason: Option<String>,
    /// Its `fieldPath` as a field error names it, relative to the node.
    field_path: String,
    uses_old_self: bool,
    optional_old_self: bool,
}

impl Rules {
    /// The rules of the schema node `m`, compiled; `None` when it has none.
    pub(crate) fn parse(m: &Map<String, Value>) -> Option<Arc<Self>> {
        let list = m.get("x-kubernetes-validations")?.as_array()?;
        let rules: Vec<Rule> = list
            .iter()
            .filter_map(Value::as_object)
            .map(|r| {
                let text_of = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
                let text = text_of("rule");
                let program = compile(&text);
                let uses_old_self = program.as_ref().is_ok_and(|p| p.references().has_variable("oldSelf"));
                let expression = text_of("messageExpression");
                let field_path = text_of("fieldPath");
                Rule {
                    program,
                    message: text_of("message"),
                    message_expression: (!expression.trim().is_empty())
                        .then(|| compile(&expression).ok())
                        .flatten(),
                    message_expression_text: expression,
                    reason: r.get("reason").and_then(Value::as_str).map(str::to_owned),
                    field_path: if field_path.is_empty() {
                        String::new()
                    } else {
                        super::field_path::resolve(m, &field_path, true)
                            .map(|r| r.normalized)
                            .unwrap_or_default()
                    },
                    uses_old_self,
                    optional_old_self: r.get("optionalOldSelf").and_then(Value::as_bool).unwrap_or(false),
                    text,
                }
            })
            .collect();
        (!rules.is_empty()).then(|| Arc::new(Self(rules)))
    }

    /// Evaluates every rule on `obj` (at field `at`, `""` for the root), with `old` the stored
    /// value there; the field errors of those that fail. `root` is a resource's root, whose
    /// `metadata` a rule reads only the name of. Each evaluation's cost is taken from `budget`,
    /// what is left of the object's; when it runs out, or one evaluation goes over the per-call
    /// limit, that is the last error and `budget` is left negative: no rule is run after it.
    pub(crate) fn check<S: Schema>(
        &self,
        at: &str,
        node: &S,
        obj: &Value,
        old: Option<&Value>,
        root: bool,
        budget: &mut i64,
    ) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if obj.is_null() {
            // Only values are validated; a rule on the parent checks for a null or a missing field.
            return errs;
        }
        let ty = node.type_name();
        let field = |path: &str| match (at.is_empty(), path.is_empty()) {
            (true, true) => "<nil>".to_owned(),
            (true, false) => path.to_owned(),
            (false, true) => at.to_owned(),
            (false, false) => format!("{at}.{path}"),
        };
        let self_value = value::to_cel(obj, Some(node), root);
        let old_value = old.map(|o| value::to_cel(o, Some(node), root));
        // Two scopes at most, made once for every rule of the node: `oldSelf` as it is, and as
        // the optional the rules with `optionalOldSelf` read.
        let scope = |old_self: Option<Cel>| {
            let mut ctx = functions().new_inner_scope();
            ctx.add_variable_from_value("self", self_value.clone());
            if let Some(o) = old_self {
                ctx.add_variable_from_value("oldSelf", o);
            }
            ctx
        };
        if *budget <= 0 {
            *budget = -1;
            errs.push((field(""), invalid(ty, OUT_OF_BUDGET)));
            return errs;
        }
        let plain = scope(old_value.clone());
        let optional = self.0.iter().any(|r| r.optional_old_self).then(|| {
            let optional = match &old_value {
                Some(v) => cel::objects::OptionalValue::of(v.clone()),
                None => cel::objects::OptionalValue::none(),
            };
            scope(Some(Cel::Opaque(Arc::new(optional))))
        });
        for rule in &self.0 {
            let program = match &rule.program {
                Ok(p) => p,
                Err(e) => {
                    errs.push((field(""), invalid(ty, &format!("rule compile error: {e}"))));
                    continue;
                }
            };
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let ctx = if rule.optional_old_self { optional.as_ref().unwrap_or(&plain) } else { &plain };
            let Spent { cost, over, .. } = actual_cost(program.expression(), ctx, PER_CALL_LIMIT);
            if !spend(budget, cost) {
                errs.push((field(""), invalid(ty, OUT_OF_BUDGET)));
                return errs;
            }
            if over {
                *budget = -1;
                let why = format!(
                    "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                    error_string(rule)
                );
                errs.push((field(""), invalid(ty, &why)));
                return errs;
            }
            match program.execute(ctx) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    let mut detail = None;
                    if let Some(m) = &rule.message_expression {
                        let Spent { cost, over, .. } = actual_cost(m.expression(), ctx, PER_CALL_LIMIT);
                        let stopped = if !spend(budget, cost) {
                            Some("messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run".to_owned())
                        } else if over {
                            Some(format!(
                                "no further validation rules will be run due to call cost exceeds limit for messageExpression: {}",
                                go_quote(&rule.message_expression_text)
                            ))
                        } else {
                            None
                        };
                        if let Some(why) = stopped {
                            *budget = -1;
                            errs.push((field(&rule.field_path), invalid(ty, &why)));
                            return errs;
                        }
                        detail = match m.execute(ctx) {
                            Ok(Cel::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
                            _ => None,
                        };
                    }
                    let detail = detail.unwrap_or_else(|| message_or_default(rule));
                    errs.push((field(&rule.field_path), by_reason(rule.reason.as_deref(), ty, &detail)));
                }
                Ok(other) => errs.push((
                    field(""),
                    invalid(
                        ty,
                        &format!(
                            "rule result is not a boolean: {other:?} evaluating rule: {}",
                            error_string(rule)
                        ),
                    ),
                )),
                Err(e) => errs.push((field(""), invalid(ty, &evaluation_error(&e, rule)))),
            }
        }
        errs
    }
}

/// The most one evaluation of a rule or an admission expression may cost (`PerCallLimit`).
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;

/// What is said where an object's rules, or an admission policy's expressions, run out of
/// their budget.
pub(crate) const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// What all of one object's rule evaluations may cost together (`RuntimeCELCostBudget`).
pub(crate) const RUNTIME_BUDGET: i64 = 10_000_000;

/// Takes `cost` from `budget`; `false`, and the budget left negative, when it does not hold
/// that much (an object's rules' budget, and each run of an admission policy's expressions).
pub(crate) fn spend(budget: &mut i64, cost: u64) -> bool {
    match i64::try_from(cost) {
        Ok(cost) if cost <= *budget => {
            *budget -= cost;
            true
        }
        _ => {
            *budget = -1;
            false
        }
    }
}

/// `ruleErrorString`: the rule's message, or the rule itself.
fn error_string(rule: &Rule) -> &str {
    if rule.message.trim().is_empty() { rule.text.trim() } else { rule.message.trim() }
}

/// `ruleMessageOrDefault`.
fn message_or_default(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", error_string(rule))
    } else {
        rule.message.trim().to_owned()
    }
}

/// `Invalid value: "<type>": <detail>`.
fn invalid(ty: &str, detail: &str) -> String {
    format!("Invalid value: {}: {detail}", go_quote(ty))
}

/// `fieldErrorForReason`.
fn by_reason(reason: Option<&str>, ty: &str, detail: &str) -> String {
    match reason {
        Some("FieldValueForbidden") => format!("Forbidden: {detail}"),
        Some("FieldValueRequired") => format!("Required value: {detail}"),
        Some("FieldValueDuplicate") => format!("Duplicate value: {}", go_quote(ty)),
        _ => invalid(ty, detail),
    }
}

/// An evaluation error as upstream words it: cel-go's error, then the rule.
fn evaluation_error(e: &ExecutionError, rule: &Rule) -> String {
    if matches!(e, ExecutionError::NoSuchOverload) {
        return format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {}",
            error_string(rule)
        );
    }
    format!("{} evaluating rule: {}", go_error(e), error_string(rule))
}

/// An evaluation error as cel-go words it (`no such key: c`, `division by zero`).
pub(crate) fn go_error(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", cel_text(i)),
        ExecutionError::NoSuchOverload => "no such overload".to_owned(),
        other => other.to_string(),
    }
}

/// A value no schema types, as CEL sees it (a built-in kind's object, a request's attributes).
pub(crate) fn untyped(v: &Value) -> Cel {
    value::to_cel::<Untyped>(v, None, false)
}

/// The schema of a value that has none.
enum Untyped {}

impl Schema for Untyped {
    fn type_name(&self) -> &str {
        match *self {}
    }
    fn format(&self) -> &str {
        match *self {}
    }
    fn field(&self, _: &str) -> Option<&Self> {
        match *self {}
    }
    fn items(&self) -> Option<&Self> {
        match *self {}
    }
}

/// A scalar as cel-go prints it in an error.
fn cel_text(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::Structural;

    /// The errors of `obj` (over `old`) against a schema of `spec` properties with `rules` on
    /// `spec`.
    fn check(
        properties: serde_json::Value,
        rules: serde_json::Value,
        obj: serde_json::Value,
        old: Option<serde_json::Value>,
    ) -> Vec<(String, String)> {
        let schema = Structural::parse(&json!({ "type": "object", "properties": { "spec": {
            "type": "object", "properties": properties, "x-kubernetes-validations": rules } } }));
        schema.validate_rules(&json!({ "spec": obj }), old.map(|o| json!({ "spec": o })).as_ref())
    }

    #[test]
    fn the_kubernetes_libraries_are_there() {
        let props = json!({
            "ports": { "type": "array", "items": { "type": "integer" } },
            "weights": { "type": "array", "items": { "type": "number" } },
            "memory": { "type": "string" },
            "image": { "type": "string" },
            "expires": { "type": "string", "format": "date-time" },
        });
        let obj = json!({ "ports": [80, 443, 8080], "weights": [1, 2.5], "memory": "1Gi", "image": "nginx:1.27", "expires": "2030-01-01T00:00:00Z" });
        for rule in [
            "self.ports.isSorted() && self.ports.sum() == 8603 && self.ports.min() == 80 && self.ports.max() == 8080",
            "self.weights.sum() == 3.5",
            "quantity(self.memory).isGreaterThan(quantity('512Mi')) && quantity(self.memory).compareTo(quantity('1024Mi')) == 0",
            "isQuantity(self.memory) && !isQuantity('1GB') && quantity('1.5').isInteger() == false && quantity('2k').asInteger() == 2000",
            "self.image.find('[0-9.]+$') == '1.27' && 'a1b22c333'.findAll('[0-9]+').size() == 3 && 'a1b22'.findAll('[0-9]+', 1) == ['1']",
            "self.expires > timestamp('2029-12-31T00:00:00Z')",
            "self.image.split(':')[0].upperAscii() == 'NGINX' && self.ports.indexOf(443) == 1",
            "isURL('https://example.com/a') && url('https://example.com:8443/a').getPort() == '8443'",
            "ip('10.0.0.1').family() == 4 && cidr('10.0.0.0/8').containsIP(ip('10.1.2.3'))",
            "sets.contains([1, 2, 3], [2]) && semver('1.2.3').isLessThan(semver('2.0.0'))",
            "'%s-%d'.format(['a', 1]) == 'a-1'",
        ] {
            let errs = check(props.clone(), json!([{ "rule": rule }]), obj.clone(), None);
            assert!(errs.is_empty(), "{rule}: {errs:?}");
        }
    }

    #[test]
    fn failures_and_evaluation_errors_are_worded_as_upstreams() {
        let props = json!({ "a": { "type": "integer" }, "b": { "type": "integer" } });
        let errs =
            check(props.clone(), json!([{ "rule": "self.a / self.b > 0" }]), json!({ "a": 1, "b": 0 }), None);
        assert_eq!(
            errs,
            [(
                "spec".to_owned(),
                r#"Invalid value: "object": division by zero evaluating rule: self.a / self.b > 0"#
                    .to_owned()
            )]
        );
        let errs = check(
            props.clone(),
            json!([{ "rule": "self.c == 1", "message": "c is one" }]),
            json!({ "a": 1 }),
            None,
        );
        assert_eq!(
            errs,
            [(
                "spec".to_owned(),
                r#"Invalid value: "object": no such key: c evaluating rule: c is one"#.to_owned()
            )]
        );
        let errs = check(props.clone(), json!([{ "rule": "self.a > 1" }]), json!({ "a": 1 }), None);
        assert_eq!(
            errs,
            [("spec".to_owned(), r#"Invalid value: "object": failed rule: self.a > 1"#.to_owned())]
        );
        let errs = check(
            props.clone(),
            json!([{ "rule": "self.a > 1", "reason": "FieldValueRequired", "message": "more" }]),
            json!({ "a": 1 }),
            None,
        );
        assert_eq!(errs, [("spec".to_owned(), "Required value: more".to_owned())]);
        // A transition rule is skipped without an old object, unless oldSelf is optional.
        let transition = json!([{ "rule": "self.a >= oldSelf.a" }]);
        assert!(check(props.clone(), transition.clone(), json!({ "a": 1 }), None).is_empty());
        assert_eq!(check(props.clone(), transition, json!({ "a": 1 }), Some(json!({ "a": 2 }))).len(), 1);
        let optional = json!([{ "rule": "!oldSelf.hasValue() || self.a >= oldSelf.value().a", "optionalOldSelf": true }]);
        assert!(check(props.clone(), optional.clone(), json!({ "a": 1 }), None).is_empty());
        assert_eq!(check(props, optional, json!({ "a": 1 }), Some(json!({ "a": 2 }))).len(), 1);
    }
}
