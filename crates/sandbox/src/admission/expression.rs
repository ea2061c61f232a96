//! The CEL expressions of admission's configuration objects, compiled once: one expression and
//! how its failure is worded, and the `matchConditions` a policy and a webhook share (upstream's
//! `webhook/matchconditions`).
//!
//! Each evaluation is costed as cel-go's tracker counts it (upstream's `filter.ForInput`): one
//! past 1,000,000 is an error (`operation cancelled: actual cost limit exceeded`), and the
//! expressions of one run — a policy's validations, its message expressions, its audit
//! annotations, or a configuration's match conditions — share a [`Budget`]; what runs past it
//! ends the run. A policy's variables are charged to the run that first reads them, as
//! upstream's lazy composition charges them.

use std::collections::{HashMap, HashSet};

use kube_cel::cel::{Context, ExecutionError, Program, Value as Cel};
use serde_json::Value;

use crate::resource::ResourceDef;
use crate::schema::cel::{
    OUT_OF_BUDGET, PER_CALL_LIMIT, Spent, actual_cost, compile, go_error, spend, untyped,
};

/// What one object's match conditions may cost together, per webhook or binding
/// (`RuntimeCELCostBudgetMatchConditions`).
pub(super) const MATCH_CONDITIONS_BUDGET: i64 = 2_500_000;

/// A run of expressions that went past its budget: upstream's words for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OutOfBudget;

impl std::fmt::Display for OutOfBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(OUT_OF_BUDGET)
    }
}

/// What evaluating each of a policy's variables cost, and the variables it read.
pub(super) type VariableCosts = HashMap<String, Spent>;

/// What one run of expressions may still spend (upstream's `remainingBudget`), and the
/// variables already charged to it.
pub(super) struct Budget<'v> {
    left: i64,
    variables: &'v VariableCosts,
    charged: HashSet<&'v str>,
}

impl<'v> Budget<'v> {
    /// A run with `budget` to spend, its expressions reading `variables`.
    pub(super) fn new(budget: i64, variables: &'v VariableCosts) -> Self {
        Self { left: budget, variables, charged: HashSet::new() }
    }

    /// What is left.
    pub(super) fn left(&self) -> i64 {
        self.left
    }

    /// Takes `cost` from what is left.
    fn spend(&mut self, cost: u64) -> Result<(), OutOfBudget> {
        if spend(&mut self.left, cost) { Ok(()) } else { Err(OutOfBudget) }
    }

    /// What evaluating the variables `read` costs this run: those not yet evaluated in it, and
    /// what they read in turn.
    fn composition(&mut self, read: &[String]) -> u64 {
        let mut cost = 0u64;
        for name in read {
            let Some((name, spent)) = self.variables.get_key_value(name.as_str()) else { continue };
            if self.charged.insert(name.as_str()) {
                cost = cost.saturating_add(spent.cost).saturating_add(self.composition(&spent.variables));
            }
        }
        cost
    }
}

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

    /// Evaluates it in `ctx`, its cost taken from `budget`: its value, or the error upstream's
    /// activation reports; `Err` when the budget does not hold its cost. `failed` are the
    /// variables that failed, by name, with why.
    pub(super) fn run(
        &self,
        ctx: &Context<'_>,
        failed: &HashMap<String, String>,
        budget: &mut Budget<'_>,
    ) -> Result<Result<Cel, String>, OutOfBudget> {
        let program = match &self.program {
            Ok(p) => p,
            Err(e) => return Ok(Err(format!("compilation error: compilation failed: {e}"))),
        };
        let spent = actual_cost(program.expression(), ctx, PER_CALL_LIMIT);
        let composition = budget.composition(&spent.variables);
        budget.spend(composition)?;
        budget.spend(spent.cost)?;
        let error = |why: String| format!("expression '{}' resulted in error: {why}", self.text);
        if spent.over {
            return Ok(Err(error(LIMIT_EXCEEDED.to_owned())));
        }
        Ok(program.execute(ctx).map_err(|e| error(why(&e, failed))))
    }
}

/// cel-go's error for an evaluation stopped past the per-call limit.
pub(super) const LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

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
    /// `utilerrors.NewAggregate` prints them) when one cannot be evaluated and none is false,
    /// or with upstream's words when together they cost more than their budget
    /// ([`MATCH_CONDITIONS_BUDGET`]). All are evaluated, as upstream's filter evaluates them,
    /// so one after a false one still costs.
    pub(super) fn all_true(
        &self,
        ctx: &Context<'_>,
        failed: &HashMap<String, String>,
        variables: &VariableCosts,
    ) -> Result<bool, String> {
        let mut budget = Budget::new(MATCH_CONDITIONS_BUDGET, variables);
        let (mut errors, mut any_false) = (Vec::new(), false);
        for condition in &self.0 {
            match condition.run(ctx, failed, &mut budget).map_err(|e| e.to_string())? {
                Ok(Cel::Bool(false)) => any_false = true,
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        match errors.len() {
            _ if any_false => Ok(false),
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
