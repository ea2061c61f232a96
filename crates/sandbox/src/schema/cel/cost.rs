//! cel-go's static cost estimate of a rule (`checker/cost.go`, as Kubernetes v1.32 vendors it),
//! with Kubernetes' estimator of its library functions (apiserver's `pkg/cel/library/cost.go`)
//! and the sizes the rule's schema bounds ([`super::size`]): the most a rule can cost, which a
//! CRD's write refuses above a budget (see `schema::structural`).
//!
//! It walks the checked rule ([`super::check`]): a literal costs nothing, a variable 1, a field
//! of an object or map 1; a call costs its arguments and its function — 1, or for what traverses
//! a string or a list, a factor of its size; a comprehension (`all`, `exists`, `map`, `filter`)
//! costs its loop's step and condition once for every element its range may hold. Sizes come from
//! the schema where the rule reaches a value through `self` (`maxLength`, `maxItems`,
//! `maxProperties`, else what fits in a request), from literals, and from what a function is known
//! to return.
//!
//! Where the checker could not type a value, the estimate takes the cheap side (its size 0, an
//! overload costing 1): an estimate here is never above upstream's for a rule it types, so no CRD
//! upstream accepts is refused.

use std::collections::HashMap;

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::check::{Checked, Kind, Ty};
use super::size;

/// A range of costs or sizes, `min..=max`; arithmetic saturates, as cel-go's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Estimate {
    /// The least.
    pub(crate) min: u64,
    /// The most.
    pub(crate) max: u64,
}

impl Estimate {
    const ZERO: Self = Self::fixed(0);
    const UNKNOWN: Self = Self { min: 0, max: u64::MAX };

    const fn fixed(n: u64) -> Self {
        Self { min: n, max: n }
    }

    fn add(self, o: Self) -> Self {
        Self { min: self.min.saturating_add(o.min), max: self.max.saturating_add(o.max) }
    }

    fn times(self, o: Self) -> Self {
        Self { min: self.min.saturating_mul(o.min), max: self.max.saturating_mul(o.max) }
    }

    fn union(self, o: Self) -> Self {
        Self { min: self.min.min(o.min), max: self.max.max(o.max) }
    }

    /// `MultiplyByCostFactor`: each bound times `f`, rounded up, in floating point as cel-go.
    fn factor(self, f: f64) -> Self {
        let one = |x: u64| {
            if x > 0 && f > 0.0 && x as f64 > u64::MAX as f64 / f {
                return u64::MAX;
            }
            let c = (x as f64 * f).ceil();
            if c >= u64::MAX as f64 { u64::MAX } else { c as u64 }
        };
        Self { min: one(self.min), max: one(self.max) }
    }
}

/// Traversing a string costs this much per byte (`StringTraversalCostFactor`).
const TRAVERSAL: f64 = 0.1;
/// Compiling a regex costs this much per byte of it (`RegexStringLengthCostFactor`).
const REGEX: f64 = 0.25;

/// The estimated cost of a checked rule.
pub(super) fn estimate(checked: &Checked<'_, '_>) -> Estimate {
    let mut coster = Coster { types: &checked.types, sizes: HashMap::new() };
    coster.cost(checked.ast)
}

/// The walk: types from the checker, the sizes calls and comprehensions are known to produce.
struct Coster<'c, 'a> {
    types: &'c HashMap<u64, Ty<'a>>,
    /// Computed sizes: of a call's result, a comprehension's, a conditional's.
    sizes: HashMap<u64, Estimate>,
}

impl Coster<'_, '_> {
    fn ty(&self, e: &IdedExpr) -> Ty<'_> {
        self.types.get(&e.id).copied().unwrap_or(Ty::Unknown)
    }

    fn kind(&self, e: &IdedExpr) -> Option<Kind> {
        self.ty(e).kind()
    }

    /// cel-go's `sizeEstimate`: a computed size, a literal's, the schema's bound, 1 for a
    /// scalar, else unbounded (0 for what the checker could not type: the cheap side).
    fn size(&self, e: &IdedExpr) -> Estimate {
        if let Some(s) = self.sizes.get(&e.id) {
            return *s;
        }
        match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => {
                return Estimate::fixed(s.inner().chars().count() as u64);
            }
            Expr::Literal(LiteralValue::Bytes(b)) => return Estimate::fixed(b.inner().len() as u64),
            Expr::Literal(_) => return Estimate::fixed(1),
            Expr::List(l) => return Estimate::fixed(l.elements.len() as u64),
            Expr::Map(m) => return Estimate::fixed(m.entries.len() as u64),
            _ => {}
        }
        match self.ty(e) {
            Ty::Declared { schema, .. } => Estimate { min: 0, max: size::max_elements(schema) },
            Ty::Unknown => Estimate::ZERO,
            t if t.kind().is_some_and(Kind::scalar) => Estimate::fixed(1),
            _ => Estimate::UNKNOWN,
        }
    }

    /// The size of a list's elements (of `join`, `isSorted`, …): the schema's items, else
    /// unbounded; 0 for a list the checker could not type.
    fn element_size(&self, list: &IdedExpr) -> Estimate {
        match self.ty(list) {
            Ty::Declared { schema, .. } => size::items(schema)
                .map_or(Estimate::UNKNOWN, |i| Estimate { min: 0, max: size::max_elements(i) }),
            Ty::Unknown => Estimate::ZERO,
            _ => Estimate::UNKNOWN,
        }
    }

    fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => Estimate::ZERO,
            Expr::Ident(_) => Estimate::fixed(1),
            // Kubernetes gives a presence test no cost of its own (`PresenceTestHasCost(false)`).
            Expr::Select(s) if s.test => self.cost(&s.operand),
            Expr::Select(s) => {
                let operand = self.cost(&s.operand);
                match self.kind(&s.operand) {
                    Some(Kind::Map | Kind::Object) => operand.add(Estimate::fixed(1)),
                    _ => operand,
                }
            }
            Expr::List(l) => l.elements.iter().fold(Estimate::fixed(10), |sum, x| sum.add(self.cost(x))),
            Expr::Map(m) => m.entries.iter().fold(Estimate::fixed(30), |sum, x| sum.add(self.entry(&x.expr))),
            Expr::Struct(s) => {
                s.entries.iter().fold(Estimate::fixed(40), |sum, x| sum.add(self.entry(&x.expr)))
            }
            Expr::Comprehension(c) => {
                let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
                let each = self.cost(&c.loop_cond).add(self.cost(&c.loop_step));
                sum = sum.add(self.cost(&c.result));
                let range = self.size(&c.iter_range);
                self.sizes.insert(e.id, range);
                sum.add(range.times(each))
            }
            Expr::Call(call) => {
                // A namespaced function (`sets.contains`, `ip.isCanonical`) parses as a call on an
                // identifier that is no variable; it is the global function, with no receiver.
                let namespaced = call.target.as_deref().and_then(|t| match &t.expr {
                    Expr::Ident(ns) if matches!(self.ty(t), Ty::Unknown) => {
                        Some(format!("{ns}.{}", call.func_name))
                    }
                    _ => None,
                });
                let (name, target) = match namespaced {
                    Some(name) => (name, None),
                    None => (call.func_name.clone(), call.target.as_deref()),
                };
                let receiver = target.map_or(Estimate::ZERO, |t| self.cost(t));
                let args: Vec<Estimate> = call.args.iter().map(|a| self.cost(a)).collect();
                receiver.add(self.call(e, &name, target, &call.args, &args))
            }
        }
    }

    fn entry(&mut self, e: &EntryExpr) -> Estimate {
        match e {
            EntryExpr::MapEntry(m) => self.cost(&m.key).add(self.cost(&m.value)),
            EntryExpr::StructField(f) => self.cost(&f.value),
        }
    }

    /// A call's cost with its arguments' (`costs`), not its receiver's; records its result's
    /// size where the function gives one.
    fn call(
        &mut self,
        e: &IdedExpr,
        name: &str,
        target: Option<&IdedExpr>,
        args: &[IdedExpr],
        costs: &[Estimate],
    ) -> Estimate {
        let all_args = costs.iter().fold(Estimate::ZERO, |s, c| s.add(*c));
        let arg = |i: usize| args.get(i);
        let size_of = |me: &Self, x: Option<&IdedExpr>| x.map_or(Estimate::ZERO, |x| me.size(x));
        let kind_of = |me: &Self, x: Option<&IdedExpr>| x.and_then(|x| me.kind(x));
        match name {
            // Only what is evaluated counts: the left side at least, both at most.
            "_&&_" | "_||_" => {
                let (l, r) = (
                    costs.first().copied().unwrap_or(Estimate::ZERO),
                    costs.get(1).copied().unwrap_or(Estimate::ZERO),
                );
                return Estimate { min: l.min, max: l.max.saturating_add(r.max) };
            }
            "_?_:_" => {
                let at = |i: usize| costs.get(i).copied().unwrap_or(Estimate::ZERO);
                let size = size_of(self, arg(1)).union(size_of(self, arg(2)));
                self.sizes.insert(e.id, size);
                return at(0).add(at(1).union(at(2)));
            }
            _ => {}
        }
        let target_size = size_of(self, target);
        let a0 = size_of(self, arg(0));
        let result = |me: &mut Self, size: Estimate| {
            me.sizes.insert(e.id, size);
        };
        let own = match name {
            // ext.Sets' own estimators come first.
            "sets.contains" | "sets.intersects" | "sets.equivalent" => {
                let f = if name == "sets.equivalent" { 2.0 } else { 1.0 };
                a0.times(size_of(self, arg(1))).factor(f).add(Estimate::fixed(1))
            }
            // Kubernetes' library estimator, by function name.
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if target.is_some() => {
                let receiver = target.and_then(|t| self.kind(t));
                if receiver == Some(Kind::List) {
                    let list = target.expect("a receiver");
                    let element = match self.ty(list).element().kind() {
                        Some(Kind::String | Kind::Bytes) => {
                            Estimate::fixed(1).add(self.element_size(list).factor(TRAVERSAL))
                        }
                        _ => Estimate::fixed(1),
                    };
                    target_size.times(element)
                } else {
                    target_size.factor(TRAVERSAL)
                }
            }
            "url" if args.len() == 1 => {
                result(self, a0);
                a0.factor(TRAVERSAL)
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" if target.is_some() => {
                result(self, target_size);
                target_size.factor(TRAVERSAL)
            }
            "replace" if target.is_some() && args.len() >= 2 => {
                let size = replaced(target_size, a0, size_of(self, arg(1)));
                result(self, size);
                target_size.factor(2.0 * TRAVERSAL)
            }
            "split" if target.is_some() => {
                let limit = match arg(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => Some(*n.inner() as u64),
                    _ => None,
                };
                result(self, Estimate { min: 0, max: limit.unwrap_or(target_size.max) });
                target_size.factor(2.0 * TRAVERSAL)
            }
            "join" if target.is_some() => {
                let list = target.expect("a receiver");
                let mut size = target_size.times(self.element_size(list));
                if let Some(sep) = arg(0) {
                    let gaps = Estimate {
                        min: target_size.min.saturating_sub(1),
                        max: target_size.max.saturating_sub(1),
                    };
                    size = size.add(self.size(sep).times(gaps));
                }
                result(self, size);
                size.factor(TRAVERSAL)
            }
            "find" | "findAll" if target.is_some() && !args.is_empty() => {
                result(self, Estimate { min: 0, max: target_size.max });
                target_size.add(Estimate::fixed(1)).factor(TRAVERSAL).times(a0.factor(REGEX))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" if !args.is_empty() => {
                a0.factor(TRAVERSAL)
            }
            "ip" => {
                if args.is_empty() {
                    Estimate::fixed(1)
                } else {
                    a0.factor(TRAVERSAL)
                }
            }
            "ip.isCanonical" => a0.factor(2.0 * TRAVERSAL),
            "containsIP" | "containsCIDR" => {
                let base = if name == "containsIP" {
                    Estimate { min: 1, max: 4 }
                } else {
                    Estimate { min: 3, max: 7 }
                };
                if kind_of(self, arg(0)) == Some(Kind::String) {
                    base.add(a0.factor(TRAVERSAL))
                } else {
                    base
                }
            }
            "validate" if !args.is_empty() => a0.factor(TRAVERSAL).factor(32.0),
            "_==_"
                if kind_of(self, arg(0)) == Some(Kind::Opaque)
                    && kind_of(self, arg(1)) == Some(Kind::Opaque) =>
            {
                Estimate::fixed(1)
            }
            // cel-go's own overloads.
            "format" if kind_of(self, target) == Some(Kind::String) => target_size.factor(TRAVERSAL),
            "bytes" if kind_of(self, arg(0)) == Some(Kind::String) => {
                result(self, Estimate { min: a0.min, max: a0.max.saturating_mul(4) });
                a0.factor(TRAVERSAL)
            }
            "string" if kind_of(self, arg(0)) == Some(Kind::Bytes) => {
                result(self, Estimate { min: a0.min / 4, max: a0.max });
                a0.factor(TRAVERSAL)
            }
            "strings.quote" => {
                result(
                    self,
                    Estimate {
                        min: a0.min.saturating_add(2),
                        max: a0.max.saturating_mul(2).saturating_add(2),
                    },
                );
                a0.factor(TRAVERSAL)
            }
            "startsWith" | "endsWith" if kind_of(self, target) == Some(Kind::String) => a0.factor(TRAVERSAL),
            "@in" if kind_of(self, arg(1)) == Some(Kind::List) => size_of(self, arg(1)),
            "matches" if kind_of(self, target) == Some(Kind::String) => {
                target_size.add(Estimate::fixed(1)).factor(TRAVERSAL).times(a0.factor(REGEX))
            }
            "contains" if kind_of(self, target) == Some(Kind::String) => {
                target_size.factor(TRAVERSAL).times(a0.factor(TRAVERSAL))
            }
            "_+_" => {
                let sum = a0.add(size_of(self, arg(1)));
                match kind_of(self, arg(0)) {
                    Some(Kind::String | Kind::Bytes) => {
                        result(self, sum);
                        sum.factor(TRAVERSAL)
                    }
                    Some(Kind::List) => {
                        result(self, sum);
                        Estimate::fixed(1)
                    }
                    _ => Estimate::fixed(1),
                }
            }
            "_<_" | "_<=_" | "_>_" | "_>=_"
                if matches!(kind_of(self, arg(0)), Some(Kind::String | Kind::Bytes)) =>
            {
                compared(a0, size_of(self, arg(1)))
            }
            "_==_" | "_!=_" => compared(a0, size_of(self, arg(1))),
            _ => Estimate::fixed(1),
        };
        own.add(all_args)
    }
}

/// Comparing two values traverses the shorter: `⌈min(sizes) × 0.1⌉`, at least 1 for what
/// has a size.
fn compared(a: Estimate, b: Estimate) -> Estimate {
    let most = a.max.min(b.max);
    Estimate { min: u64::from(most > 0), max: most }.factor(TRAVERSAL)
}

/// The size of `s.replace(old, new)`: every match replaced, as many as can be.
fn replaced(s: Estimate, old: Estimate, new: Estimate) -> Estimate {
    let (count_max, kept_max) = if old.min == 0 {
        (if s.max == u64::MAX { s.max } else { s.max + 1 }, s.max)
    } else if new.max <= old.min {
        (0, s.max)
    } else {
        (s.max.div_ceil(old.min), 0)
    };
    let (count_min, kept_min) = if old.max == 0 {
        (s.min.saturating_add(1), s.min)
    } else if old.max <= new.min {
        (0, s.min)
    } else {
        (s.min.div_ceil(old.max), 0)
    };
    Estimate { min: count_min, max: count_max }.times(new).add(Estimate { min: kept_min, max: kept_max })
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::super::check::check;
    use super::*;

    fn schema() -> Map<String, Value> {
        json!({ "type": "object", "properties": {
            "items": { "type": "array", "maxItems": 100, "items": { "type": "object", "properties": {
                "name": { "type": "string", "maxLength": 63 } } } },
            "names": { "type": "array", "items": { "type": "string" } },
            "short": { "type": "array", "maxItems": 10, "items": { "type": "string", "maxLength": 10 } },
            "name": { "type": "string" },
            "min": { "type": "integer" },
            "labels": { "type": "object", "additionalProperties": { "type": "string" } },
        } })
        .as_object()
        .cloned()
        .unwrap()
    }

    fn cost(rule: &str) -> Estimate {
        let schema = schema();
        let program = super::super::compile(rule).unwrap();
        estimate(&check(rule, program.expression(), &schema, false, true))
    }

    #[test]
    fn costs_are_cel_gos() {
        // Worked by hand from checker/cost.go: range 2, init 0, result 1, 100 × (step 5 + condition 2).
        assert_eq!(cost("self.items.all(x, x.name.size() < 64)"), Estimate { min: 3, max: 703 });
        assert_eq!(cost("self.min > 0"), Estimate::fixed(3));
        assert_eq!(cost("has(self.name)"), Estimate::fixed(1));
        // ⌈(3,145,726 + 1) × 0.1⌉ × ⌈3 × 0.25⌉
        assert_eq!(cost("self.name.matches('^a')").max, 314_573 + 2);
        // A string's comparison traverses the shorter side.
        assert_eq!(cost("self.name == 'abc'").max, 1 + 2);
        // Short strings in a short list: 10 × (⌈41 × 0.1⌉ × 1 + 3 + 1 + …).
        assert!(cost("self.short.all(s, s.matches('^a'))").max < 100);
        // An unbounded list of unbounded strings, each matched: far beyond any budget.
        assert!(cost("self.names.all(s, s.matches('^a'))").max > 100 * 10_000_000);
        // A string built from a number has no known size: concatenating it is unbounded.
        assert!(cost("'min ' + string(self.min)").max > 100 * 10_000_000);
        // A map's keys have no size of their own.
        assert!(cost("self.labels.all(k, k.startsWith('a'))").max < 10_000_000);
    }
}
