//! Upstream's validation rules, row by row (`crates/sandbox/validation/`, see its README): each
//! row of the inventory becomes a request — a valid object of the row's kind, broken by the row's
//! case alone — and the sandbox's answer is checked against the row's field, error type and
//! message. Prints the coverage per kind and in total; fails when a row marked `tested` does not
//! pass, when a row is still `todo` (every row that applies is implemented and tested: a new row
//! lands with its rule), or when a row is malformed.
//!
//! `VALIDATION_INVENTORY_MARK=1` marks the `todo` rows that now pass as `tested` in their files
//! (it never marks a row back: a `tested` row that fails is a regression to fix);
//! `VALIDATION_INVENTORY_SHOW=1` prints what the sandbox answered to each `todo` row;
//! `VALIDATION_INVENTORY_FILE=pod.tsv` reads that file alone.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Full};
use kube_sandbox::{Sandbox, SandboxConfig};
use serde_json::{Map, Value, json};
use tower::ServiceExt;

/// The error types a cause can have, with the `reason` upstream gives each.
const TYPES: [(&str, &str); 10] = [
    ("Required", "FieldValueRequired"),
    ("Invalid", "FieldValueInvalid"),
    ("NotSupported", "FieldValueNotSupported"),
    ("Forbidden", "FieldValueForbidden"),
    ("Duplicate", "FieldValueDuplicate"),
    ("TooLong", "FieldValueTooLong"),
    ("TooMany", "FieldValueTooMany"),
    ("TypeInvalid", "FieldValueTypeInvalid"),
    ("NotFound", "FieldValueNotFound"),
    ("Internal", "InternalError"),
];

/// Whether a row is implemented, waiting, or does not apply.
#[derive(Debug, Clone, PartialEq)]
enum State {
    Tested,
    Todo,
    Out(String),
}

/// One row of the inventory.
#[derive(Debug, Clone)]
struct Row {
    file: String,
    line: usize,
    kind: String,
    op: String,
    field: String,
    reason: &'static str,
    case: Map<String, Value>,
    message: String,
    state: State,
}

impl Row {
    fn at(&self) -> String {
        format!("{}:{}", self.file, self.line)
    }

    /// The object's name: the case's, else the base's own (a kind whose name is made of its
    /// spec, as a CRD's `<plural>.<group>`), else one unique to the row.
    fn name(&self, base: &Value) -> String {
        match self.case.get("name").or_else(|| base.get("name")).and_then(Value::as_str) {
            Some(n) => n.to_owned(),
            None => format!("{}-{}", self.file.trim_end_matches(".tsv"), self.line),
        }
    }
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("validation")
}

fn parse_row(file: &str, line: usize, text: &str) -> Result<Row, String> {
    let cols: Vec<&str> = text.split('\t').collect();
    let [kind, op, field, ty, _condition, _upstream, case, message, state] = cols[..] else {
        return Err(format!("{file}:{line}: {} columns, not 9", cols.len()));
    };
    if !matches!(op, "create" | "update" | "status") {
        return Err(format!("{file}:{line}: op {op:?} is not create, update or status"));
    }
    let reason = TYPES
        .iter()
        .find(|(t, _)| *t == ty)
        .map(|(_, r)| *r)
        .ok_or_else(|| format!("{file}:{line}: type {ty:?} is not one of upstream's"))?;
    let case = match serde_json::from_str(case) {
        Ok(Value::Object(m)) => m,
        Ok(other) => return Err(format!("{file}:{line}: the case {other} is not a JSON object")),
        Err(e) => return Err(format!("{file}:{line}: the case is not JSON: {e}")),
    };
    let state = match state.trim() {
        "tested" => State::Tested,
        "todo" => State::Todo,
        s if s.starts_with("out:") && s.len() > 5 => State::Out(s[4..].trim().to_owned()),
        s => return Err(format!("{file}:{line}: state {s:?} is not tested, todo or out: <why>")),
    };
    Ok(Row {
        file: file.to_owned(),
        line,
        kind: kind.to_owned(),
        op: op.to_owned(),
        field: field.to_owned(),
        reason,
        case,
        // A message upstream ends with a newline writes it as a trailing `\n` (inside the message,
        // `\n` is what Go's quoting prints for a newline in a value).
        message: message.strip_suffix("\\n").map_or_else(|| message.to_owned(), |m| format!("{m}\n")),
        state,
    })
}

/// Every row of every `.tsv`, in file and line order.
fn rows() -> Result<Vec<Row>, Vec<String>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("the inventory's folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .filter(|p| std::env::var_os("VALIDATION_INVENTORY_FILE").is_none_or(|f| p.file_name() == Some(&f)))
        .collect();
    files.sort();
    let (mut rows, mut errors) = (Vec::new(), Vec::new());
    for path in files {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("an inventory file");
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            match parse_row(&file, i + 1, line) {
                Ok(r) => rows.push(r),
                Err(e) => errors.push(e),
            }
        }
    }
    if errors.is_empty() { Ok(rows) } else { Err(errors) }
}

/// Sets `value` at the JSON pointer `pointer`, making objects (or arrays, before a numeric
/// token) on the way; `null` removes the field.
fn set(target: &mut Value, pointer: &str, value: Value) -> Result<(), String> {
    let tokens: Vec<String> =
        pointer.split('/').skip(1).map(|t| t.replace("~1", "/").replace("~0", "~")).collect();
    let Some((last, path)) = tokens.split_last() else { return Err("an empty pointer".into()) };
    let mut at = target;
    for (i, token) in path.iter().enumerate() {
        let next_is_index = tokens[i + 1].bytes().all(|b| b.is_ascii_digit());
        let fresh = || if next_is_index { json!([]) } else { json!({}) };
        at = match at {
            Value::Object(m) => m.entry(token.clone()).or_insert_with(fresh),
            Value::Array(a) => {
                let i: usize = token.parse().map_err(|_| format!("{pointer}: {token} is not an index"))?;
                if i == a.len() {
                    a.push(fresh());
                }
                a.get_mut(i).ok_or_else(|| format!("{pointer}: no item {i}"))?
            }
            _ => return Err(format!("{pointer}: {token} is under a scalar")),
        };
    }
    match at {
        Value::Object(m) if value.is_null() => {
            m.remove(last);
        }
        Value::Object(m) => {
            m.insert(last.clone(), value);
        }
        Value::Array(a) => {
            let i: usize = last.parse().map_err(|_| format!("{pointer}: {last} is not an index"))?;
            match (i.cmp(&a.len()), value.is_null()) {
                (std::cmp::Ordering::Less, true) => {
                    a.remove(i);
                }
                (std::cmp::Ordering::Less, false) => a[i] = value,
                (std::cmp::Ordering::Equal, false) => a.push(value),
                _ => return Err(format!("{pointer}: no item {i}")),
            }
        }
        _ => return Err(format!("{pointer}: {last} is under a scalar")),
    }
    Ok(())
}

fn apply(obj: &mut Value, changes: &Map<String, Value>) -> Result<(), String> {
    for (k, v) in changes.iter().filter(|(k, _)| k.starts_with('/')) {
        set(obj, k, v.clone())?;
    }
    Ok(())
}

async fn call(sb: &Sandbox, method: &str, uri: &str, body: &Value) -> (u16, Value) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let resp = sb.service().oneshot(req).await.unwrap();
    let code = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (code, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

/// Sends the row's request; `Ok` when the answer is the row's, else what was answered.
///
/// A kind whose base names a `parent` and a `subresource` (a TokenRequest, an Eviction, a Scale)
/// is sent to that subresource of a parent object created for the row: a `create` row POSTs the
/// kind's object there; an `update` row reads the subresource, applies the case and PUTs it back.
/// An `update` row's `first` (pointers, as the case's) is written through the subresource before
/// the row's own write (an ephemeral container to remove). A case's `before` lists other objects the row needs (`path` and `object`): they are created
/// first and deleted after. A base marked `read_parent` (a namespace's `finalize`, which answers no GET) is read from the
/// parent object before it is written through the subresource. A base marked `unnamed` (the access reviews, whose metadata must be empty) is sent without a
/// name.
async fn run(sb: &Sandbox, bases: &Value, row: &Row) -> Result<(), String> {
    let base = bases.get(&row.kind).ok_or_else(|| format!("no base object for kind {:?}", row.kind))?;
    let sub = base["subresource"].as_str();
    let holder = match base["parent"].as_str() {
        Some(parent) => bases.get(parent).ok_or_else(|| format!("no base object for parent {parent:?}"))?,
        None => base,
    };
    let mut path = holder["path"].as_str().ok_or("a base without a path")?.to_owned();
    if let Some(ns) = row.case.get("namespace").and_then(Value::as_str) {
        path = path.replace("/namespaces/default/", &format!("/namespaces/{ns}/"));
    }
    let mut obj = holder["object"].clone();
    let name = row.name(holder);
    if holder["unnamed"] != true {
        obj["metadata"]["name"] = json!(name);
    }
    // Objects the row needs besides its own (a pod a token is bound to): created first, removed
    // after.
    let others: Vec<(String, Value)> = row
        .case
        .get("before")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| (o["path"].as_str().unwrap_or("").to_owned(), o["object"].clone()))
        .collect();
    for (at, object) in &others {
        let (code, made) = call(sb, "POST", at, object).await;
        if code != 201 {
            return Err(format!("an object the row needs was refused ({code}): {}", made["message"]));
        }
    }
    let (code, answer) = if let Some(sub) = sub {
        if let Some(Value::Object(before)) = row.case.get("create") {
            apply(&mut obj, before)?;
        }
        let (code, created) = call(sb, "POST", &path, &obj).await;
        if code != 201 {
            return Err(format!("the valid parent was refused ({code}): {}", created["message"]));
        }
        let at = format!("{path}/{}/{sub}", name);
        if row.op == "create" {
            let mut body = base["object"].clone();
            if body["metadata"].is_object() {
                body["metadata"]["name"] = json!(name);
            }
            apply(&mut body, &row.case)?;
            call(sb, "POST", &at, &body).await
        } else {
            let read_at = if base["read_parent"] == true { format!("{path}/{}", name) } else { at.clone() };
            if let Some(Value::Object(first)) = row.case.get("first") {
                let (_, mut read) = call(sb, "GET", &read_at, &Value::Null).await;
                apply(&mut read, first)?;
                let (code, written) = call(sb, "PUT", &at, &read).await;
                if code != 200 {
                    return Err(format!(
                        "the valid first write was refused ({code}): {}",
                        written["message"]
                    ));
                }
            }
            let (code, mut read) = call(sb, "GET", &read_at, &Value::Null).await;
            if code != 200 {
                return Err(format!("reading {at} answered {code}: {}", read["message"]));
            }
            apply(&mut read, &row.case)?;
            call(sb, "PUT", &at, &read).await
        }
    } else if row.op == "create" {
        apply(&mut obj, &row.case)?;
        call(sb, "POST", &path, &obj).await
    } else {
        if let Some(Value::Object(before)) = row.case.get("create") {
            apply(&mut obj, before)?;
        }
        let (code, created) = call(sb, "POST", &path, &obj).await;
        if code != 201 {
            return Err(format!("the valid object was refused ({code}): {}", created["message"]));
        }
        // Read back: a controller may have written the object since (a CRD's naming controller
        // sets its status), and a PUT of the create's answer would be a conflict.
        let (code, mut created) = call(sb, "GET", &format!("{path}/{name}"), &Value::Null).await;
        if code != 200 {
            return Err(format!("reading the created object answered {code}: {}", created["message"]));
        }
        apply(&mut created, &row.case)?;
        let status = if row.op == "status" { "/status" } else { "" };
        call(sb, "PUT", &format!("{path}/{}{status}", name), &created).await
    };
    // The row's object goes, so that one the sandbox accepted against upstream's rules (a
    // LimitRange whose defaults admission would give every later pod) does not change the rows
    // after it.
    let _ = call(sb, "DELETE", &format!("{path}/{name}"), &json!({})).await;
    for (at, object) in others.iter().rev() {
        let name = object["metadata"]["name"].as_str().unwrap_or("");
        let _ = call(sb, "DELETE", &format!("{at}/{name}"), &json!({})).await;
    }
    let want_code = row.case.get("code").and_then(Value::as_u64).unwrap_or(422);
    let said = || format!("{code} {}", answer["message"].as_str().unwrap_or("(no message)"));
    if u64::from(code) != want_code {
        return Err(format!("answered {}", said()));
    }
    if row.field == "-" {
        return if answer["message"] == row.message.as_str() {
            Ok(())
        } else {
            Err(format!("answered {}", said()))
        };
    }
    let cause = &answer["details"]["causes"][0];
    let want = json!({ "reason": row.reason, "message": row.message, "field": row.field });
    if *cause != want {
        return Err(format!("first cause {cause}; answered {}", said()));
    }
    Ok(())
}

/// Rewrites the `todo` state of each passing row to `tested`.
fn mark(passing: &[&Row]) {
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for r in passing {
        by_file.entry(&r.file).or_default().push(r.line);
    }
    for (file, lines) in by_file {
        let path = dir().join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut out = String::new();
        for (i, line) in text.lines().enumerate() {
            if lines.contains(&(i + 1)) && line.ends_with("\ttodo") {
                out.push_str(&line[..line.len() - 4]);
                out.push_str("tested");
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        std::fs::write(&path, out).unwrap();
    }
}

#[derive(Default)]
struct Tally {
    rows: usize,
    out: usize,
    tested: usize,
    todo_passing: usize,
}

#[tokio::test]
async fn every_base_object_is_valid() {
    let shared = Sandbox::with_config(SandboxConfig::bare());
    // A webhook configuration stored is called for what it matches (the base Pod, whose webhook
    // Service is nowhere): each is created in a sandbox of its own.
    let apart = Sandbox::with_config(SandboxConfig::bare());
    let bases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("objects.json")).unwrap()).unwrap();
    let mut refused = Vec::new();
    for (kind, base) in bases.as_object().unwrap() {
        let sb = if kind.ends_with("WebhookConfiguration") { &apart } else { &shared };
        let name =
            base["name"].as_str().map_or_else(|| format!("base-{}", kind.to_lowercase()), str::to_owned);
        let (Some(parent), Some(sub)) = (base["parent"].as_str(), base["subresource"].as_str()) else {
            let mut obj = base["object"].clone();
            if base["unnamed"] != true {
                obj["metadata"]["name"] = json!(name);
            }
            let (code, answer) = call(sb, "POST", base["path"].as_str().unwrap(), &obj).await;
            if code != 201 {
                refused.push(format!("{kind}: {code} {}", answer["message"]));
            }
            continue;
        };
        // A subresource's base: its parent is created, then the base is POSTed to the
        // subresource (or, without an object of its own, the subresource is read and written back).
        let holder = &bases[parent];
        let mut obj = holder["object"].clone();
        obj["metadata"]["name"] = json!(name);
        let path = holder["path"].as_str().unwrap();
        let (code, answer) = call(sb, "POST", path, &obj).await;
        if code != 201 {
            refused.push(format!("{kind}'s parent {parent}: {code} {}", answer["message"]));
            continue;
        }
        let at = format!("{path}/{name}/{sub}");
        let (code, answer) = if base["object"].is_null() {
            let read_at = if base["read_parent"] == true { format!("{path}/{name}") } else { at.clone() };
            let (_, read) = call(sb, "GET", &read_at, &Value::Null).await;
            call(sb, "PUT", &at, &read).await
        } else {
            let mut body = base["object"].clone();
            if body["metadata"].is_object() {
                body["metadata"]["name"] = json!(name);
            }
            call(sb, "POST", &at, &body).await
        };
        if !matches!(code, 200 | 201) {
            refused.push(format!("{kind} at {at}: {code} {}", answer["message"]));
        }
    }
    assert!(refused.is_empty(), "base objects refused:\n{}", refused.join("\n"));
}

#[tokio::test]
async fn each_rule_of_upstream_is_enforced_as_upstream_words_it() {
    let rows = rows().unwrap_or_else(|errors| panic!("malformed rows:\n{}", errors.join("\n")));
    let bases: Value =
        serde_json::from_str(&std::fs::read_to_string(dir().join("objects.json")).unwrap()).unwrap();
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let mut tally: BTreeMap<String, Tally> = BTreeMap::new();
    let (mut regressions, mut passing_todo, mut failing_todo) = (Vec::new(), Vec::new(), Vec::new());
    for row in &rows {
        let t = tally.entry(row.kind.clone()).or_default();
        t.rows += 1;
        if let State::Out(_) = row.state {
            t.out += 1;
            continue;
        }
        let result = run(&sb, &bases, row).await;
        match (&row.state, result) {
            (State::Tested, Ok(())) => t.tested += 1,
            (State::Tested, Err(e)) => {
                regressions.push(format!("{} {} {} {}: {e}", row.at(), row.kind, row.op, row.field))
            }
            (State::Todo, Ok(())) => {
                t.todo_passing += 1;
                passing_todo.push(row);
            }
            (State::Todo, Err(e)) => {
                if std::env::var_os("VALIDATION_INVENTORY_SHOW").is_some() {
                    println!("todo {} {} {} {}: {e}", row.at(), row.kind, row.op, row.field);
                }
                failing_todo.push(row.at());
            }
            (State::Out(_), _) => {}
        }
    }
    let mut report =
        String::from("kind                     rows  out  apply  tested  coverage  todo-passing\n");
    let mut total = Tally::default();
    for (kind, t) in &tally {
        let apply = t.rows - t.out;
        #[allow(clippy::cast_precision_loss)]
        let pct = if apply == 0 { 100.0 } else { 100.0 * t.tested as f64 / apply as f64 };
        let _ = writeln!(
            report,
            "{kind:<24} {:>5} {:>4} {apply:>6} {:>7} {pct:>8.1}% {:>13}",
            t.rows, t.out, t.tested, t.todo_passing
        );
        total.rows += t.rows;
        total.out += t.out;
        total.tested += t.tested;
        total.todo_passing += t.todo_passing;
    }
    let apply = total.rows - total.out;
    #[allow(clippy::cast_precision_loss)]
    let pct = 100.0 * total.tested as f64 / apply.max(1) as f64;
    let _ = writeln!(
        report,
        "{:<24} {:>5} {:>4} {apply:>6} {:>7} {pct:>8.1}% {:>13}",
        "total", total.rows, total.out, total.tested, total.todo_passing
    );
    println!("{report}");
    if std::env::var_os("VALIDATION_INVENTORY_MARK").is_some() {
        mark(&passing_todo);
    } else if !passing_todo.is_empty() {
        println!("{} todo rows pass; VALIDATION_INVENTORY_MARK=1 marks them tested", passing_todo.len());
    }
    assert!(regressions.is_empty(), "rows marked tested that fail:\n{}", regressions.join("\n"));
    assert!(
        passing_todo.is_empty() || std::env::var_os("VALIDATION_INVENTORY_MARK").is_some(),
        "rows that pass but are marked todo (VALIDATION_INVENTORY_MARK=1 marks them)"
    );
    assert!(
        failing_todo.is_empty(),
        "rows not yet implemented (VALIDATION_INVENTORY_SHOW=1 prints the answers): {}",
        failing_todo.join(", ")
    );
}

#[test]
fn a_pointer_sets_makes_and_removes() {
    let mut obj = json!({ "spec": { "a": 1, "list": [1, 2] } });
    set(&mut obj, "/spec/a", Value::Null).unwrap();
    set(&mut obj, "/spec/list/2", json!(3)).unwrap();
    set(&mut obj, "/spec/new/0/k~1v", json!("x")).unwrap();
    assert_eq!(obj, json!({ "spec": { "list": [1, 2, 3], "new": [{ "k/v": "x" }] } }));
    assert!(set(&mut obj, "/spec/list/9", json!(0)).is_err());
}
