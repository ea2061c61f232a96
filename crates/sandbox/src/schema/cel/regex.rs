//! The regular expressions of CEL's `matches` and the Kubernetes library's `find` and `findAll`,
//! compiled once per pattern. The libraries compile the pattern at every call; a rule or policy
//! evaluated on every write names the same few patterns, and compiling one costs more than the
//! rest of the evaluation.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use kube_cel::cel::extractors::{Arguments, This};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, ResolveResult, Value};
use parking_lot::Mutex;
use regex::Regex;

/// The most patterns kept; past it the cache starts again (patterns are few and written in
/// rules, not in data).
const KEPT: usize = 512;

/// Puts the three functions in place of the libraries' own.
pub(super) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("matches", matches);
    ctx.add_function("find", find);
    ctx.add_function("findAll", find_all);
}

/// `pattern`, compiled (or found compiled).
fn compiled(pattern: &str) -> Result<Arc<Regex>, regex::Error> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(re) = cache.lock().get(pattern) {
        return Ok(Arc::clone(re));
    }
    let re = Arc::new(Regex::new(pattern)?);
    let mut cache = cache.lock();
    if cache.len() >= KEPT {
        cache.clear();
    }
    cache.insert(pattern.to_owned(), Arc::clone(&re));
    Ok(re)
}

/// `<string>.matches(<pattern>)`: whether the pattern matches anywhere in the string.
fn matches(
    ftx: &FunctionContext,
    This(this): This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, ExecutionError> {
    match compiled(&pattern) {
        Ok(re) => Ok(re.is_match(&this)),
        Err(e) => Err(ftx.error(format!("'{pattern}' not a valid regex:\n{e}"))),
    }
}

/// `<string>.find(<pattern>)`: the first match, or `""`.
fn find(This(this): This<Arc<String>>, pattern: Arc<String>) -> ResolveResult {
    let re = compiled(&pattern)
        .map_err(|e| ExecutionError::function_error("find", format!("invalid regex: {e}")))?;
    Ok(Value::String(Arc::new(re.find(&this).map_or_else(String::new, |m| m.as_str().to_owned()))))
}

/// `<string>.findAll(<pattern>)` and `<string>.findAll(<pattern>, <limit>)`: every match, or
/// the first `limit` (a negative limit: all).
fn find_all(This(this): This<Arc<String>>, Arguments(args): Arguments) -> ResolveResult {
    let Some(Value::String(pattern)) = args.first() else {
        return Err(ExecutionError::function_error("findAll", "expected string pattern"));
    };
    let re = compiled(pattern)
        .map_err(|e| ExecutionError::function_error("findAll", format!("invalid regex: {e}")))?;
    let limit = match args.get(1) {
        Some(Value::Int(n)) => usize::try_from(*n).unwrap_or(usize::MAX),
        _ => usize::MAX,
    };
    let found = re.find_iter(&this).take(limit).map(|m| Value::String(Arc::new(m.as_str().to_owned())));
    Ok(Value::List(Arc::new(found.collect())))
}

#[cfg(test)]
mod tests {
    use kube_cel::cel::{Program, Value};

    fn eval(expr: &str) -> Value {
        Program::compile(expr).unwrap().execute(super::super::functions()).unwrap()
    }

    #[test]
    fn the_cached_functions_answer_as_the_libraries_do() {
        for _ in 0..2 {
            assert_eq!(eval("'web-1'.matches('^[a-z0-9-]+$')"), Value::Bool(true));
            assert_eq!(eval("matches('Web', '^[a-z]+$')"), Value::Bool(false));
            assert_eq!(eval("'a1b22c333'.find('[0-9]+')"), Value::String("1".to_owned().into()));
            assert_eq!(eval("'abc'.find('[0-9]+')"), Value::String(String::new().into()));
            assert_eq!(eval("'a1b22c333'.findAll('[0-9]+').size()"), Value::Int(3));
            assert_eq!(eval("'a1b22c333'.findAll('[0-9]+', 2)"), eval("['1', '22']"));
            assert_eq!(eval("'a1b22'.findAll('[0-9]+', -1).size()"), Value::Int(2));
        }
        assert!(Program::compile("'a'.matches('(')").unwrap().execute(super::super::functions()).is_err());
    }
}
