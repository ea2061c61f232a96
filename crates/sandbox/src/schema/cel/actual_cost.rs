//! What one evaluation of a rule costs, as cel-go's runtime tracker counts it
//! (`interpreter/runtimecost.go`, with Kubernetes' `library.CostEstimator` for its functions),
//! so a rule is stopped at upstream's per-call limit and an object's rules at their budget.
//!
//! The walk follows the evaluation: a variable or a field read costs 1, a literal nothing (nor
//! does a list or map of literals, nor a conversion of one, nor `in` such a list: cel-go folds
//! them into constants), a list built 10, a map 30; a call costs its function — 1, or for what
//! traverses a string or list, a factor of the actual sizes of its arguments. `&&`, `||` and
//! `?:` cost only the operands evaluated, and a comprehension its range once, then its
//! condition and step for each element until the condition is not true (`all` stops at the
//! first false). The values the walk needs (a condition, a range, an argument's size) are
//! evaluated by the interpreter; the rule's own result is the interpreter's, not the walk's.

use std::borrow::Cow;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::common::types::{CelBytes, CelList, CelMap, CelString};
use kube_cel::cel::common::value::Val;
use kube_cel::cel::{Context, Value as Cel};

/// Why a walk stopped before the end.
#[derive(Debug, PartialEq, Eq)]
enum Stopped {
    /// The evaluation failed: it costs what was counted up to there.
    Failed,
    /// The cost went over the limit (`operation cancelled: actual cost limit exceeded`).
    OverLimit,
}

/// What one evaluation cost.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Spent {
    /// Its cost, as far as it went.
    pub cost: u64,
    /// Whether it stopped over the limit.
    pub over: bool,
    /// The composited variables it read (`variables.x`), in the order it read them: an
    /// admission policy's variables are evaluated when first read, and charged there.
    pub variables: Vec<String>,
}

/// What evaluating `e` in `ctx` costs, stopping past `limit`.
pub(crate) fn actual_cost(e: &IdedExpr, ctx: &Context<'_>, limit: u64) -> Spent {
    let mut tracker = Tracker { cost: 0, limit, variables: Vec::new() };
    let over = tracker.walk(e, ctx) == Err(Stopped::OverLimit);
    Spent { cost: tracker.cost, over, variables: tracker.variables }
}

struct Tracker {
    cost: u64,
    limit: u64,
    variables: Vec<String>,
}

type Walked = Result<(), Stopped>;

/// `actualSize`: a string's characters, bytes', a list's items, a map's entries; 1 else.
fn size(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        s.inner().chars().count() as u64
    } else if let Some(b) = v.downcast_ref::<CelBytes>() {
        b.inner().len() as u64
    } else if let Some(l) = v.downcast_ref::<CelList>() {
        l.inner().len() as u64
    } else if let Some(m) = v.downcast_ref::<CelMap>() {
        m.inner().len() as u64
    } else {
        1
    }
}

/// Kubernetes' `traversalCost`: a tenth of a string's bytes (rounded down), a list's items'
/// and a map's entries' summed, 1 for anything else.
fn traversal(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        (s.inner().len() as f64 * 0.1) as u64
    } else if let Some(b) = v.downcast_ref::<CelBytes>() {
        (b.inner().len() as f64 * 0.1) as u64
    } else if let Some(l) = v.downcast_ref::<CelList>() {
        l.inner().iter().map(|i| traversal(i.as_ref())).sum()
    } else if let Some(m) = v.downcast_ref::<CelMap>() {
        m.inner().values().map(|v| traversal(v.as_ref()) + 1).sum()
    } else {
        1
    }
}

fn is_string(v: &dyn Val) -> bool {
    v.downcast_ref::<CelString>().is_some() || v.downcast_ref::<CelBytes>().is_some()
}

/// `⌈x × f⌉`.
fn times(x: u64, f: f64) -> u64 {
    (x as f64 * f).ceil() as u64
}

/// Whether `e` is a constant cel-go's planner folds: a literal, or a list or map of them.
fn constant(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Literal(_) => true,
        Expr::List(l) => l.elements.iter().all(constant),
        Expr::Map(m) => m.entries.iter().all(|entry| match &entry.expr {
            EntryExpr::MapEntry(m) => constant(&m.key) && constant(&m.value),
            EntryExpr::StructField(_) => false,
        }),
        _ => false,
    }
}

/// The type conversions a constant argument is folded through.
const CONVERSIONS: [&str; 9] =
    ["int", "uint", "double", "string", "bytes", "bool", "duration", "timestamp", "dyn"];

impl Tracker {
    fn charge(&mut self, n: u64) -> Walked {
        self.cost = self.cost.saturating_add(n);
        if self.cost > self.limit { Err(Stopped::OverLimit) } else { Ok(()) }
    }

    /// The value of `e`, evaluated by the interpreter.
    fn value<'c>(e: &'c IdedExpr, ctx: &'c Context<'c>) -> Result<Cow<'c, dyn Val>, Stopped> {
        Cel::resolve_val(e, ctx).map_err(|_| Stopped::Failed)
    }

    fn bool_of(e: &IdedExpr, ctx: &Context<'_>) -> Result<bool, Stopped> {
        match Cel::resolve(e, ctx) {
            Ok(Cel::Bool(b)) => Ok(b),
            _ => Err(Stopped::Failed),
        }
    }

    fn walk(&mut self, e: &IdedExpr, ctx: &Context<'_>) -> Walked {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Ok(()),
            Expr::Ident(_) => self.charge(1),
            // A presence test charges its operand's reads, not the field tested.
            Expr::Select(s) if s.test => self.walk(&s.operand, ctx),
            Expr::Select(s) => {
                self.walk(&s.operand, ctx)?;
                if matches!(&s.operand.expr, Expr::Ident(v) if v == "variables") {
                    self.variables.push(s.field.clone());
                }
                self.charge(1)
            }
            Expr::List(l) => {
                if constant(e) {
                    return Ok(());
                }
                for x in &l.elements {
                    self.walk(x, ctx)?;
                }
                self.charge(10)
            }
            Expr::Map(m) => {
                if constant(e) {
                    return Ok(());
                }
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            self.walk(&m.key, ctx)?;
                            self.walk(&m.value, ctx)?;
                        }
                        EntryExpr::StructField(f) => self.walk(&f.value, ctx)?,
                    }
                }
                self.charge(30)
            }
            Expr::Struct(s) => {
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        self.walk(&f.value, ctx)?;
                    }
                }
                self.charge(40)
            }
            Expr::Comprehension(c) => {
                self.walk(&c.iter_range, ctx)?;
                let range = Cel::resolve(&c.iter_range, ctx).map_err(|_| Stopped::Failed)?;
                let elements: Vec<Cel> = match range {
                    Cel::List(items) => items.iter().cloned().collect(),
                    Cel::Map(m) => m.map.keys().map(|k| Cel::from(k.clone())).collect(),
                    _ => return Err(Stopped::Failed),
                };
                self.walk(&c.accu_init, ctx)?;
                // A boolean or count is carried as the interpreter computes it (a condition
                // reads it); a list being built costs the same whatever it holds.
                let mut accu = Cel::resolve(&c.accu_init, ctx).map_err(|_| Stopped::Failed)?;
                let scalar = matches!(accu, Cel::Bool(_) | Cel::Int(_));
                for element in elements {
                    let mut scope = ctx.new_inner_scope();
                    scope.add_variable_from_value(c.iter_var.clone(), element);
                    scope.add_variable_from_value(c.accu_var.clone(), accu.clone());
                    self.walk(&c.loop_cond, &scope)?;
                    if !Self::bool_of(&c.loop_cond, &scope)? {
                        break;
                    }
                    self.walk(&c.loop_step, &scope)?;
                    if scalar {
                        accu = Cel::resolve(&c.loop_step, &scope).map_err(|_| Stopped::Failed)?;
                    }
                }
                let mut scope = ctx.new_inner_scope();
                scope.add_variable_from_value(c.accu_var.clone(), accu);
                self.walk(&c.result, &scope)
            }
            Expr::Call(call) => self.call(e, &call.func_name, call.target.as_deref(), &call.args, ctx),
        }
    }

    fn call(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        ctx: &Context<'_>,
    ) -> Walked {
        match (name, args) {
            // Only what is evaluated counts; `&&` stops at a false, `||` at a true, as the
            // interpreter does (an error on the left is decided by the right).
            ("_&&_" | "_||_", [left, right]) => {
                self.walk(left, ctx)?;
                let decided = name == "_||_";
                if Self::bool_of(left, ctx).ok() == Some(decided) {
                    return Ok(());
                }
                return self.walk(right, ctx);
            }
            ("_?_:_", [cond, yes, no]) => {
                self.walk(cond, ctx)?;
                return if Self::bool_of(cond, ctx)? { self.walk(yes, ctx) } else { self.walk(no, ctx) };
            }
            // Folded into a set of constants, which costs nothing to look up.
            ("@in", [x, list]) if constant(list) => return self.walk(x, ctx),
            (conversion, [x]) if target.is_none() && CONVERSIONS.contains(&conversion) && constant(x) => {
                return Ok(());
            }
            _ => {}
        }
        // A namespaced function (`sets.contains`) parses as a call on an identifier no
        // variable holds: it is the global function, and the identifier is not read.
        let (name, target) = match target.map(|t| &t.expr) {
            Some(Expr::Ident(ns)) if ctx.get_variable(ns).is_none() => {
                (Cow::Owned(format!("{ns}.{name}")), None)
            }
            _ => (Cow::Borrowed(name), target),
        };
        if let Some(t) = target {
            self.walk(t, ctx)?;
        }
        for a in args {
            self.walk(a, ctx)?;
        }
        let own = Self::function(e, &name, target, args, ctx)?;
        self.charge(own)
    }

    /// What a function costs on its arguments' actual values (`CallCost`, then cel-go's).
    fn function(
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        ctx: &Context<'_>,
    ) -> Result<u64, Stopped> {
        // The receiver first, then the arguments, as cel-go passes them.
        let operands: Vec<&IdedExpr> = target.into_iter().chain(args).collect();
        let size_of = |i: usize| -> Result<u64, Stopped> {
            operands.get(i).map_or(Ok(0), |x| Self::value(x, ctx).map(|v| size(v.as_ref())))
        };
        let string_at = |i: usize| -> Result<bool, Stopped> {
            operands.get(i).map_or(Ok(false), |x| Self::value(x, ctx).map(|v| is_string(v.as_ref())))
        };
        Ok(match name {
            "sets.contains" | "sets.intersects" | "sets.equivalent" => {
                let f = if name == "sets.equivalent" { 2.0 } else { 1.0 };
                1 + (size_of(0)?.saturating_mul(size_of(1)?) as f64 * f) as u64
            }
            "check" => 350_000,
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if target.is_some() => {
                operands.first().map_or(Ok(0), |x| Self::value(x, ctx).map(|v| traversal(v.as_ref())))?
            }
            "url" | "lowerAscii" | "upperAscii" | "substring" | "trim" | "cidr" | "isIP" | "isCIDR"
            | "quantity" | "isQuantity" => times(size_of(0)?, 0.1),
            "ip" if target.is_some() => 1,
            "ip" => times(size_of(0)?, 0.1),
            "ip.isCanonical" => times(size_of(0)?, 0.2),
            "replace" | "split" if target.is_some() => times(size_of(0)?, 0.2),
            "join" if target.is_some() => {
                let joined = Cel::resolve(e, ctx).map_err(|_| Stopped::Failed)?;
                let n = match &joined {
                    Cel::String(s) => s.chars().count() as u64,
                    _ => 1,
                };
                times(n, 0.2)
            }
            "find" | "findAll" if target.is_some() => times(1 + size_of(0)?, 0.1) * times(size_of(1)?, 0.25),
            "format" if target.is_some() && string_at(0)? => times(size_of(0)?, 0.1),
            "bytes" | "string" if target.is_none() && (string_at(0)?) => times(size_of(0)?, 0.1),
            "startsWith" | "endsWith" if string_at(0)? => times(size_of(0)?, 0.1),
            "@in" if Self::value(&args[1], ctx).is_ok_and(|v| v.downcast_ref::<CelList>().is_some()) => {
                size_of(1)?
            }
            "matches" if target.is_some() && string_at(0)? => {
                times(1 + size_of(0)?, 0.1) * times(size_of(1)?, 0.25)
            }
            "contains" if target.is_some() && string_at(0)? => {
                times(size_of(0)?, 0.1) * times(size_of(1)?, 0.1)
            }
            "_+_" if string_at(0)? => times(size_of(0)? + size_of(1)?, 0.1),
            "_<_" | "_<=_" | "_>_" | "_>=_" if string_at(0)? => times(size_of(0)?.min(size_of(1)?), 0.1),
            "_==_" | "_!=_" => times(size_of(0)?.min(size_of(1)?), 0.1),
            _ => 1,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{compile, functions, untyped};
    use super::*;

    fn cost(rule: &str, self_value: serde_json::Value) -> (u64, bool) {
        let program = compile(rule).unwrap();
        let mut ctx = functions().new_inner_scope();
        ctx.add_variable_from_value("self", untyped(&self_value));
        let spent = actual_cost(program.expression(), &ctx, 1_000);
        (spent.cost, spent.over)
    }

    #[test]
    fn an_evaluation_costs_what_cel_gos_tracker_counts() {
        let items = json!({ "items": [{ "name": "a" }, { "name": "b" }, { "name": "c" }] });
        // Range 2; per item, condition 2 and step 1 + 4; result 1.
        assert_eq!(cost("self.items.all(x, x.name.size() < 64)", items.clone()), (24, false));
        // `all` stops at the first false: one step (1 + 3), then the condition that ends it.
        assert_eq!(cost("self.items.all(x, x.name == 'z')", items.clone()), (2 + 2 + 4 + 2 + 1, false));
        // `&&` stops at a false left side; constants and their lists cost nothing.
        assert_eq!(cost("self.items.size() > 5 && self.items.all(x, true)", items.clone()), (4, false));
        assert_eq!(cost("'b' in ['a', 'b']", items.clone()), (0, false));
        // A string's traversal: ⌈(1 + 10) × 0.1⌉ × ⌈6 × 0.25⌉.
        assert_eq!(cost("self.s.matches('^[a-z]')", json!({ "s": "abcdefghij" })), (2 + 2 * 2, false));
        // Past the limit, the walk stops.
        let long = json!({ "items": (0..500).map(|i| json!({ "name": i.to_string() })).collect::<Vec<_>>() });
        let (spent, over) = cost("self.items.all(x, x.name.size() >= 0)", long);
        assert!(over && spent > 1_000 && spent < 1_020, "{spent}");
    }
}
