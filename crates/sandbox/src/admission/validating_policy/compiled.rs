//! A ValidatingAdmissionPolicy compiled, and one evaluation of it: upstream's `validator`
//! (`plugin/policy/validating/validator.go`) over its `variables` (composition), its
//! `matchConditions`, its `validations` with their message expressions, and its
//! `auditAnnotations`.
//!
//! Variables are evaluated in order, after the match conditions (which cannot read them) and
//! before anything else reads them (upstream evaluates them lazily). One that fails is reported
//! by the expression that reads it, in upstream's words; what one cost is charged to each run
//! of expressions that reads it, as upstream's lazy composition charges it.
//!
//! Costs follow upstream's validator: the match conditions share 2,500,000; the validations
//! 10,000,000, and their message expressions (all of them, whatever their validation gave)
//! what the validations left; the audit annotations 10,000,000 of their own. Validations or
//! audit annotations past their budget end the evaluation with one error decision; message
//! expressions past theirs make every validation that did not fail to evaluate an error.

use std::collections::HashMap;

use kube_cel::cel::{Context, Value as Cel};
use serde_json::Value;

use super::super::FailurePolicy;
use super::super::expression::{Budget, Expression, LIMIT_EXCEEDED, MatchConditions, VariableCosts, why};
use crate::go_print::go_quote;
use crate::schema::cel::{PER_CALL_LIMIT, RUNTIME_BUDGET, actual_cost, functions};

/// The longest message a `messageExpression` may give (`MaxEvaluatedMessageExpressionSizeBytes`).
const MAX_MESSAGE: usize = 5 * 1024;

/// One of `validations`.
struct Validation {
    expression: Expression,
    message: String,
    message_expression: Option<Expression>,
    reason: Option<String>,
}

/// A policy, compiled.
pub(super) struct Compiled {
    pub failure_policy: FailurePolicy,
    variables: Vec<Expression>,
    match_conditions: MatchConditions,
    validations: Vec<Validation>,
    audit_annotations: Vec<Expression>,
}

/// What one validation decided.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Decision {
    Admit,
    /// The request is refused (by a false validation, or an error under `failurePolicy: Fail`);
    /// `reason` the validation's (none: `Invalid`).
    Deny {
        message: String,
        reason: Option<String>,
    },
}

/// What an audit annotation's expression gave.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Annotation {
    Publish {
        key: String,
        value: String,
    },
    /// An error under `failurePolicy: Fail`: the request is refused with it.
    Error(String),
}

/// What one evaluation of a policy (for one binding and one param) decided.
#[derive(Debug, Default)]
pub(super) struct Outcome {
    pub decisions: Vec<Decision>,
    pub annotations: Vec<Annotation>,
}

/// The variables an evaluation binds (upstream's activation); cloning one shares its values.
#[derive(Clone)]
pub(super) struct Inputs {
    pub object: Cel,
    pub old_object: Cel,
    pub request: Cel,
    pub params: Cel,
    pub namespace_object: Cel,
    pub authorizer: Cel,
}

impl Compiled {
    /// Compiles `policy`'s expressions (one that does not compile is an error where it is
    /// evaluated).
    pub(super) fn new(policy: &Value) -> Self {
        let spec = policy.get("spec").unwrap_or(&Value::Null);
        let list = |field: &str| spec.get(field).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[]);
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or("").to_owned();
        let named = |field: &str, name: &str, expression: &str| -> Vec<Expression> {
            list(field).iter().map(|v| Expression::new(&text(v, name), &text(v, expression))).collect()
        };
        Self {
            failure_policy: FailurePolicy::of(spec),
            variables: named("variables", "name", "expression"),
            match_conditions: MatchConditions::new(spec.get("matchConditions")),
            validations: list("validations")
                .iter()
                .map(|v| Validation {
                    expression: Expression::new("", &text(v, "expression")),
                    message: text(v, "message"),
                    message_expression: Some(text(v, "messageExpression"))
                        .filter(|m| !m.trim().is_empty())
                        .map(|m| Expression::new("", &m)),
                    reason: v.get("reason").and_then(Value::as_str).map(str::to_owned),
                })
                .collect(),
            audit_annotations: named("auditAnnotations", "key", "valueExpression"),
        }
    }

    /// Evaluates the policy on `inputs`: nothing when a match condition is false.
    pub(super) fn evaluate(&self, inputs: Inputs) -> Outcome {
        let mut ctx = functions().new_inner_scope();
        ctx.add_variable_from_value("object", inputs.object);
        ctx.add_variable_from_value("oldObject", inputs.old_object);
        ctx.add_variable_from_value("request", inputs.request);
        ctx.add_variable_from_value("params", inputs.params);
        ctx.add_variable_from_value("namespaceObject", inputs.namespace_object);
        ctx.add_variable_from_value("authorizer", inputs.authorizer);
        let on_error = |message: String| match self.failure_policy {
            FailurePolicy::Fail => Decision::Deny { message, reason: None },
            FailurePolicy::Ignore => Decision::Admit,
        };
        let ended = |message: String| Outcome { decisions: vec![on_error(message)], annotations: Vec::new() };
        // Match conditions come before the variables, which they cannot read.
        match self.match_conditions.all_true(&ctx, &HashMap::new(), &VariableCosts::new()) {
            Ok(false) => return Outcome::default(),
            Ok(true) => {}
            Err(message) => return ended(message),
        }
        let (failed, costs) = self.bind_variables(&mut ctx);

        let mut budget = Budget::new(RUNTIME_BUDGET, &costs);
        let mut results = Vec::with_capacity(self.validations.len());
        for v in &self.validations {
            match v.expression.run(&ctx, &failed, &mut budget) {
                Ok(result) => results.push(result),
                Err(out) => return ended(out.to_string()),
            }
        }
        // Every message expression runs, on what the validations left.
        let mut messages = Budget::new(budget.left(), &costs);
        let mut evaluated = Vec::with_capacity(self.validations.len());
        let mut messages_out = None;
        for v in &self.validations {
            let Some(m) = &v.message_expression else {
                evaluated.push(None);
                continue;
            };
            match m.run(&ctx, &failed, &mut messages) {
                Ok(result) => evaluated.push(result.ok()),
                Err(out) => {
                    messages_out = Some(out);
                    break;
                }
            }
        }
        let decisions = self
            .validations
            .iter()
            .zip(results)
            .enumerate()
            .map(|(i, (v, result))| match (result, messages_out) {
                (Err(e), _) => on_error(e),
                (Ok(_), Some(out)) => on_error(format!("failed messageExpression: {out}")),
                (Ok(Cel::Bool(true)), None) => Decision::Admit,
                (Ok(_), None) => Decision::Deny {
                    message: v.message(evaluated.get(i).cloned().flatten()),
                    reason: v.reason.clone(),
                },
            })
            .collect();

        let mut budget = Budget::new(RUNTIME_BUDGET, &costs);
        let mut annotations = Vec::new();
        for a in &self.audit_annotations {
            let result = match a.run(&ctx, &failed, &mut budget) {
                Ok(result) => result,
                Err(out) => return ended(out.to_string()),
            };
            let annotation = match result {
                Err(e) => match self.failure_policy {
                    FailurePolicy::Fail => Some(Annotation::Error(e)),
                    FailurePolicy::Ignore => None,
                },
                Ok(Cel::String(s)) if !s.trim().is_empty() => {
                    Some(Annotation::Publish { key: a.name.clone(), value: s.trim().to_owned() })
                }
                Ok(Cel::String(_) | Cel::Null) => None,
                Ok(other) => Some(Annotation::Error(format!(
                    "valueExpression '{}' resulted in unsupported return type: {}. Return type must be either string or null.",
                    a.text,
                    type_name(&other)
                ))),
            };
            annotations.extend(annotation);
        }
        Outcome { decisions, annotations }
    }

    /// Binds `variables`, each evaluated in order (a variable may read those before it): the
    /// errors of those that failed, worded as upstream's composition reports them, and what
    /// each cost.
    fn bind_variables(&self, ctx: &mut Context<'_>) -> (HashMap<String, String>, VariableCosts) {
        let mut failed = HashMap::new();
        let mut costs = VariableCosts::new();
        let mut values: HashMap<String, Cel> = HashMap::new();
        ctx.add_variable_from_value("variables", values.clone());
        for v in &self.variables {
            let name = go_quote(&v.name);
            let program = match &v.program {
                Ok(p) => p,
                Err(e) => {
                    failed
                        .insert(v.name.clone(), format!("composited variable {name} fails to compile: {e}"));
                    continue;
                }
            };
            let spent = actual_cost(program.expression(), ctx, PER_CALL_LIMIT);
            let over = spent.over;
            costs.insert(v.name.clone(), spent);
            let evaluated = if over {
                Err(LIMIT_EXCEEDED.to_owned())
            } else {
                program.execute(ctx).map_err(|e| why(&e, &failed))
            };
            match evaluated {
                Ok(value) => {
                    values.insert(v.name.clone(), value);
                    ctx.add_variable_from_value("variables", values.clone());
                }
                Err(why) => {
                    failed.insert(
                        v.name.clone(),
                        format!("composited variable {name} fails to evaluate: {why}"),
                    );
                }
            }
        }
        (failed, costs)
    }
}

impl Validation {
    /// The message of a failed validation: its message expression's string (trimmed, one line,
    /// not too long), else its message, else `failed expression: <expression>`.
    fn message(&self, evaluated: Option<Cel>) -> String {
        let evaluated = match evaluated {
            Some(Cel::String(s)) => {
                let s = s.trim();
                (!s.is_empty() && s.len() <= MAX_MESSAGE && !s.contains('\n')).then(|| s.to_owned())
            }
            _ => None,
        };
        evaluated.unwrap_or_else(|| {
            if self.message.trim().is_empty() {
                format!("failed expression: {}", self.expression.text.trim())
            } else {
                self.message.trim().to_owned()
            }
        })
    }
}

/// A value's CEL type, as cel-go names it.
fn type_name(v: &Cel) -> &'static str {
    match v {
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::Bool(_) => "bool",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        Cel::Null => "null_type",
        Cel::Timestamp(_) => "google.protobuf.Timestamp",
        Cel::Duration(_) => "google.protobuf.Duration",
        _ => "dyn",
    }
}
