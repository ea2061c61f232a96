//! The CEL expressions of admission's configuration objects, compiled once: one expression and
//! how its failure is worded, and the `matchConditions` a policy and a webhook share (upstream's
//! `webhook/matchconditions`).

use std::collections::HashMap;

use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use serde_json::Value;

use crate::resource::ResourceDef;
use crate::schema::cel::{compile, go_error, untyped};

/// One expression of a configuration object, compiled.
pub(super) struct Expression {
    /// Its name (a variable's, a match condition's) or key (an audit annotation's).
    pub name: String,
    pub text: String,
    pub program: Result<Program, String>,
}

impl Expression {
    pub(super) fn new(name: &str, text: &str) -> Self {
        Self { name: name.to_owned(), text: text.to_owned(), program: compile(text) }
    }

    /// Evaluates it in `ctx`: its value, or the error upstream's activation reports. `failed`
    /// are the variables that failed, by name, with why.
    pub(super) fn run(&self, ctx: &Context<'_>, failed: &HashMap<String, String>) -> Result<Cel, String> {
        let program =
            self.program.as_ref().map_err(|e| format!("compilation error: compilation failed: {e}"))?;
        program
            .execute(ctx)
            .map_err(|e| format!("expression '{}' resulted in error: {}", self.text, why(&e, failed)))
    }
}

/// Why an evaluation failed: the failure of the variable it read (a missing key of
/// `variables` named by `failed`), else cel-go's words.
pub(super) fn why(e: &ExecutionError, failed: &HashMap<String, String>) -> String {
    match e {
        ExecutionError::NoSuchKey(k) if failed.contains_key(k.as_str()) => failed[k.as_str()].clone(),
        _ => go_error(e),
    }
}

/// A configuration's `matchConditions`, compiled.
pub(super) struct MatchConditions(Vec<Expression>);

impl MatchConditions {
    /// The conditions of `list` (a `matchConditions` array, or nothing).
    pub(super) fn new(list: Option<&Value>) -> Self {
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).unwrap_or("").to_owned();
        Self(
            list.and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| Expression::new(&text(c, "name"), &text(c, "expression")))
                .collect(),
        )
    }

    /// Whether none is false; `Err` with their errors (one bare, several in brackets, as
    /// `utilerrors.NewAggregate` prints them) when one cannot be evaluated and none is false.
    pub(super) fn all_true(
        &self,
        ctx: &Context<'_>,
        failed: &HashMap<String, String>,
    ) -> Result<bool, String> {
        let mut errors = Vec::new();
        for condition in &self.0 {
            match condition.run(ctx, failed) {
                Ok(Cel::Bool(false)) => return Ok(false),
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            0 => Ok(true),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// Whether there are none.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `v`, an object of `def`, as CEL reads it: a custom resource typed by its schema.
pub(super) fn typed(def: &ResourceDef, v: &Value) -> Cel {
    match def.custom() {
        Some(c) => c.schema.cel_value(v),
        None => untyped(v),
    }
}
