//! Server-side printing of custom resources: the `meta.k8s.io/v1` Tables kubectl asks for
//! (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) when it runs `kubectl get` on a
//! custom resource, with the columns the CRD's `additionalPrinterColumns` declare.
//!
//! The built-in kinds' Tables are [`super::table`]'s; a custom resource's come from here. The
//! server prints the rows; kubectl only lays them out. Followed:
//! `staging/src/k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor/tableconvertor.go`
//! (columns, cells), `pkg/apihelpers/helpers.go` `GetColumnsForVersion` /
//! `serveDefaultColumnsIfEmpty` (the default `Age` column), and
//! `staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go` `HumanDuration` (ages).
//!
//! - Every Table starts with `Name` (type `string`, format `name`, described by `ObjectMeta.name`'s
//!   documentation); then the version's columns, or — when it declares none — `Age`
//!   (`.metadata.creationTimestamp`, type `date`).
//! - A column whose `jsonPath` does not parse ends the list there: upstream's `New` returns the
//!   columns before it along with the error, and the handler serves those.
//! - A cell is the first value the column's path selects ([`JsonPath::find`]), or `null` when it
//!   selects nothing (or fails). Type `string` prints it as Go's `fmt.Print` does (`3`, `true`,
//!   `map[a:1 b:[x y]]`, and `<no value>` for a `null`); `integer`, `number` and `boolean` keep a
//!   value of that kind (an `integer` column truncates a float) and are `null` otherwise; `date`
//!   turns an RFC 3339 string into an age (`5m`, `3h20m`, `2d`; `<invalid>` when it does not
//!   parse, `<unknown>` when empty). `format` is passed on to kubectl and changes nothing here.

use std::sync::OnceLock;

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use schemars::generate::SchemaGenerator;
use serde_json::{Value, json};

use crate::jsonpath::JsonPath;
use crate::object_meta::meta_str;

/// One of a CRD version's `additionalPrinterColumns`, ready to print.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    /// The header (`name`).
    pub name: String,
    /// `type`: `string`, `integer`, `number`, `boolean` or `date` — how cells are rendered.
    pub type_: String,
    /// `format` (`name`, `int32`, `byte`, …): only passed on in the column definition.
    pub format: String,
    /// `description`, or upstream's `Custom resource definition column (in JSONPath format): …`.
    pub description: String,
    /// `priority`: 0 shows in `kubectl get`, higher only with `-o wide`.
    pub priority: i32,
    /// The parsed `jsonPath`.
    pub path: JsonPath,
}

/// The columns one entry of a CRD's `spec.versions` prints after `Name`: its
/// `additionalPrinterColumns` (up to the first whose `jsonPath` does not parse), or upstream's
/// default `Age` column when it has none.
#[must_use]
pub fn from_crd_version(version: &Value) -> Vec<PrinterColumn> {
    let declared =
        version.get("additionalPrinterColumns").and_then(Value::as_array).filter(|c| !c.is_empty());
    let Some(declared) = declared else {
        return vec![PrinterColumn {
            name: "Age".into(),
            type_: "date".into(),
            format: String::new(),
            description: object_meta_doc("creationTimestamp").to_owned(),
            priority: 0,
            path: JsonPath::parse(".metadata.creationTimestamp").expect("a valid path"),
        }];
    };
    let mut columns = Vec::with_capacity(declared.len());
    for column in declared {
        let text = |key: &str| column.get(key).and_then(Value::as_str).unwrap_or("");
        let json_path = text("jsonPath");
        let Ok(path) = JsonPath::parse(json_path) else { break };
        let description = match text("description") {
            "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
            given => given.to_owned(),
        };
        columns.push(PrinterColumn {
            name: text("name").to_owned(),
            type_: text("type").to_owned(),
            format: text("format").to_owned(),
            description,
            priority: column
                .get("priority")
                .and_then(Value::as_i64)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            path,
        });
    }
    columns
}

/// A Table of custom resources `objects`: `Name`, then `columns` (from [`from_crd_version`]).
/// `headers` false leaves the column definitions out, as the API server does after the first
/// event of a watch. The same shape as [`super::table::table`]: rows carry their object as
/// `PartialObjectMetadata`.
#[must_use]
pub fn table(columns: &[PrinterColumn], objects: &[Value], resource_version: &str, headers: bool) -> Value {
    table_at(columns, objects, resource_version, headers, Timestamp::now())
}

fn table_at(
    columns: &[PrinterColumn],
    objects: &[Value],
    resource_version: &str,
    headers: bool,
    now: Timestamp,
) -> Value {
    let definitions: Vec<Value> = if headers {
        std::iter::once(json!({
            "name": "Name", "type": "string", "format": "name",
            "description": object_meta_doc("name"), "priority": 0,
        }))
        .chain(columns.iter().map(|c| {
            json!({
                "name": c.name, "type": c.type_, "format": c.format,
                "description": c.description, "priority": c.priority,
            })
        }))
        .collect()
    } else {
        Vec::new()
    };
    let cells = |o: &Value| {
        std::iter::once(json!(meta_str(o, "name"))).chain(columns.iter().map(|c| cell(c, o, now))).collect()
    };
    super::table::assemble(definitions, objects, cells, resource_version)
}

/// A column's cell for `obj` (upstream's `ConvertToTable` loop and `cellForJSONValue`).
fn cell(column: &PrinterColumn, obj: &Value, now: Timestamp) -> Value {
    let Some(&value) = column.path.find(obj).first() else { return Value::Null };
    match (column.type_.as_str(), value) {
        ("string", Value::Null) => json!("<no value>"),
        ("string", v) => Value::String(crate::go_print::go_print(v)),
        ("integer", Value::Number(n)) => {
            json!(n.as_i64().unwrap_or_else(|| n.as_f64().unwrap_or(0.0) as i64))
        }
        ("number", Value::Number(n)) => {
            float_value(n.as_i64().map_or_else(|| n.as_f64().unwrap_or(0.0), |i| i as f64))
        }
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(age(s, now)),
        _ => Value::Null,
    }
}

/// A float64 as Go's encoding/json writes it: integral values without a fraction.
fn float_value(f: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53
    if f.fract() == 0.0 && f.abs() < EXACT { json!(f as i64) } else { json!(f) }
}

/// A `date` cell: upstream's `metav1.Time.UnmarshalQueryParameter` and
/// `ConvertToHumanReadableDateType`.
fn age(text: &str, now: Timestamp) -> String {
    /// Go's `time.Duration` ends at about 292 years.
    const DURATION_SECS: i64 = i64::MAX / 1_000_000_000;
    if text.is_empty() || text == "null" {
        return "<unknown>".into();
    }
    let Some(t) = parse_rfc3339(text) else { return "<invalid>".into() };
    if t.to_string() == "0001-01-01T00:00:00Z" {
        return "<unknown>".into();
    }
    human_duration(now.duration_since(t).as_secs().clamp(-DURATION_SECS, DURATION_SECS))
}

/// `text` as Go's `time.Parse(time.RFC3339, …)` takes it: `2006-01-02T15:04:05Z` with an optional
/// fraction of a second (of any length) and `Z` or a `±hh:mm` offset.
fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    let number = |at: usize, len: usize, max: u32| -> Option<u32> {
        let digits = b.get(at..at + len)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n = digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0'));
        (n <= max).then_some(n)
    };
    number(0, 4, 9999)?;
    number(5, 2, 12).filter(|&m| m >= 1)?;
    number(8, 2, 31).filter(|&d| d >= 1)?;
    number(11, 2, 23)?;
    number(14, 2, 59)?;
    number(17, 2, 59)?;
    if b.len() < 19 || [b[4], b[7], b[10], b[13], b[16]] != *b"--T::" {
        return None;
    }
    let mut rest = &text[19..];
    let mut fraction = "";
    if rest.len() >= 2 && rest.starts_with('.') && rest.as_bytes()[1].is_ascii_digit() {
        let len = 1 + rest[1..].bytes().take_while(u8::is_ascii_digit).count();
        // Go reads nanoseconds and ignores further digits.
        fraction = &rest[..len.min(10)];
        rest = &rest[len..];
    }
    if rest != "Z" {
        let z = rest.as_bytes();
        let offset_ok = z.len() == 6
            && matches!(z[0], b'+' | b'-')
            && z[3] == b':'
            && rest.get(1..3).and_then(|h| h.parse::<u8>().ok()).is_some_and(|h| h <= 23)
            && rest.get(4..6).and_then(|m| m.parse::<u8>().ok()).is_some_and(|m| m <= 59);
        if !offset_ok {
            return None;
        }
    }
    format!("{}{fraction}{rest}", &text[..19]).parse().ok()
}

/// Kubernetes' human duration (apimachinery's `duration.HumanDuration`), from whole seconds
/// (truncated toward zero): `45s`, `119s`, `3m20s`, `15m`, `3h`, `5h30m`, `20h`, `3d4h`, `45d`,
/// `2y30d`, `10y`. Two seconds or more in the future is `<invalid>`; less is `0s`.
pub(crate) fn human_duration(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".into();
    }
    if secs < 0 {
        return "0s".into();
    }
    if secs < 120 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        return match secs % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = secs / 3600;
    let (days, years) = (hours / 24, hours / 24 / 365);
    match hours {
        0..8 => match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        },
        8..48 => format!("{hours}h"),
        48..192 => match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        },
        192..17_520 => format!("{days}d"),
        17_520..70_080 => match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        },
        _ => format!("{years}y"),
    }
}

/// The documentation of an `ObjectMeta` field (upstream's `metav1.ObjectMeta{}.SwaggerDoc()`),
/// from k8s-openapi's schema.
fn object_meta_doc(field: &str) -> &'static str {
    static SCHEMA: OnceLock<Value> = OnceLock::new();
    let schema =
        SCHEMA.get_or_init(|| Value::from(SchemaGenerator::default().into_root_schema_for::<ObjectMeta>()));
    schema
        .get("properties")
        .and_then(|p| p.get(field))
        .and_then(|f| f.get("description"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    //! Expectations from upstream's `tableconvertor.go` / `tableconvertor_test.go`,
    //! `apihelpers/helpers.go` (default columns) and `util/duration/duration_test.go`.

    use super::*;

    fn now() -> Timestamp {
        "2024-05-10T12:00:00Z".parse().unwrap()
    }

    fn column(type_: &str, path: &str) -> PrinterColumn {
        let version =
            json!({ "additionalPrinterColumns": [{ "name": "C", "type": type_, "jsonPath": path }] });
        from_crd_version(&version).pop().unwrap()
    }

    fn cell_of(type_: &str, path: &str, obj: &Value) -> Value {
        cell(&column(type_, path), obj, now())
    }

    fn widget() -> Value {
        json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": { "name": "w1", "namespace": "default", "creationTimestamp": "2024-05-10T11:55:00Z" },
            "spec": { "size": 3, "ratio": 2.7, "big": 1e6, "on": true, "nothing": null, "tags": ["x", "y"],
                      "nested": { "b": [1, 2.5], "a": { "z": null } }, "when": "2024-05-08T09:30:00+02:00" },
        })
    }

    #[test]
    fn default_columns_are_age() {
        let columns = from_crd_version(&json!({ "name": "v1", "served": true }));
        assert_eq!(columns.len(), 1);
        let age = &columns[0];
        assert_eq!(
            (age.name.as_str(), age.type_.as_str(), age.format.as_str(), age.priority),
            ("Age", "date", "", 0)
        );
        assert!(age.description.starts_with("CreationTimestamp is a timestamp representing the server time"));
        assert_eq!(from_crd_version(&json!({ "additionalPrinterColumns": [] })).len(), 1);
        assert_eq!(cell(age, &widget(), now()), json!("5m"));
    }

    #[test]
    fn declared_columns() {
        let version = json!({ "additionalPrinterColumns": [
            { "name": "Size", "type": "integer", "format": "int32", "jsonPath": ".spec.size", "priority": 1 },
            { "name": "On", "type": "boolean", "jsonPath": ".spec.on", "description": "Whether it is on" },
        ] });
        let columns = from_crd_version(&version);
        assert_eq!(columns.len(), 2);
        assert_eq!((columns[0].format.as_str(), columns[0].priority), ("int32", 1));
        assert_eq!(
            columns[0].description,
            "Custom resource definition column (in JSONPath format): .spec.size"
        );
        assert_eq!(columns[1].description, "Whether it is on");
        // A path that does not parse ends the list (upstream's New returns what it has).
        let version = json!({ "additionalPrinterColumns": [
            { "name": "A", "type": "string", "jsonPath": ".a" },
            { "name": "B", "type": "string", "jsonPath": ".b[" },
            { "name": "C", "type": "string", "jsonPath": ".c" },
        ] });
        let names: Vec<String> = from_crd_version(&version).into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["A"]);
    }

    #[test]
    fn table_shape() {
        let columns = from_crd_version(&json!({ "additionalPrinterColumns": [
            { "name": "Size", "type": "integer", "jsonPath": ".spec.size" },
        ] }));
        let t = table_at(&columns, &[widget()], "42", true, now());
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({ "resourceVersion": "42" }));
        let name = &t["columnDefinitions"][0];
        assert_eq!(
            (&name["name"], &name["type"], &name["format"], &name["priority"]),
            (&json!("Name"), &json!("string"), &json!("name"), &json!(0))
        );
        assert!(name["description"].as_str().unwrap().starts_with("Name must be unique within a namespace."));
        assert_eq!(
            t["columnDefinitions"][1],
            json!({ "name": "Size", "type": "integer", "format": "", "priority": 0,
                    "description": "Custom resource definition column (in JSONPath format): .spec.size" })
        );
        assert_eq!(t["rows"][0]["cells"], json!(["w1", 3]));
        assert_eq!(
            t["rows"][0]["object"],
            json!({ "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": widget()["metadata"] })
        );
        let t = table_at(&columns, &[widget()], "42", false, now());
        assert_eq!(t["columnDefinitions"], json!([]));
        assert_eq!(t["rows"][0]["cells"], json!(["w1", 3]));
    }

    #[test]
    fn string_cells_print_like_go() {
        let w = widget();
        assert_eq!(cell_of("string", ".metadata.name", &w), json!("w1"));
        assert_eq!(cell_of("string", ".spec.size", &w), json!("3"));
        assert_eq!(cell_of("string", ".spec.ratio", &w), json!("2.7"));
        assert_eq!(cell_of("string", ".spec.big", &w), json!("1e+06"));
        assert_eq!(cell_of("string", ".spec.on", &w), json!("true"));
        assert_eq!(cell_of("string", ".spec.tags", &w), json!("[x y]"));
        assert_eq!(cell_of("string", ".spec.nested", &w), json!("map[a:map[z:<nil>] b:[1 2.5]]"));
        assert_eq!(cell_of("string", ".spec.nothing", &w), json!("<no value>"));
        assert_eq!(cell_of("string", ".spec.missing", &w), Value::Null);
        // Several results: the first.
        assert_eq!(cell_of("string", ".spec.tags[*]", &w), json!("x"));
    }

    #[test]
    fn typed_cells_keep_their_kind_or_are_null() {
        let w = widget();
        assert_eq!(cell_of("integer", ".spec.size", &w), json!(3));
        assert_eq!(cell_of("integer", ".spec.ratio", &w), json!(2));
        assert_eq!(cell_of("integer", ".metadata.name", &w), Value::Null);
        assert_eq!(cell_of("integer", ".spec.nothing", &w), Value::Null);
        assert_eq!(cell_of("number", ".spec.size", &w), json!(3));
        assert_eq!(cell_of("number", ".spec.ratio", &w), json!(2.7));
        assert_eq!(cell_of("number", ".spec.tags", &w), Value::Null);
        assert_eq!(cell_of("boolean", ".spec.on", &w), json!(true));
        assert_eq!(cell_of("boolean", ".spec.size", &w), Value::Null);
        assert_eq!(cell_of("date", ".spec.when", &w), json!("2d4h"));
        assert_eq!(cell_of("date", ".metadata.name", &w), json!("<invalid>"));
        assert_eq!(cell_of("date", ".spec.size", &w), Value::Null);
        let dates = json!({ "e": "", "z": "0001-01-01T00:00:00Z", "f": "2024-05-10T11:59:59.123456789123Z",
                            "future": "2024-05-10T12:00:05Z", "lower": "2024-05-10t11:00:00z" });
        assert_eq!(cell_of("date", ".e", &dates), json!("<unknown>"));
        assert_eq!(cell_of("date", ".z", &dates), json!("<unknown>"));
        assert_eq!(cell_of("date", ".f", &dates), json!("0s"));
        assert_eq!(cell_of("date", ".future", &dates), json!("<invalid>"));
        assert_eq!(cell_of("date", ".lower", &dates), json!("<invalid>"));
        // An unknown type prints nothing.
        assert_eq!(cell_of("thing", ".spec.size", &w), Value::Null);
    }

    #[test]
    fn human_durations() {
        let cases = [
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (599, "9m59s"),
            (600, "10m"),
            (10_799, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 30 * 60, "3h30m"),
            (8 * 3600 + 59 * 60, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (53 * 3600, "2d5h"),
            (8 * 86_400, "8d"),
            (729 * 86_400, "729d"),
            (730 * 86_400, "2y"),
            (740 * 86_400, "2y10d"),
            (8 * 365 * 86_400, "8y"),
        ];
        for (secs, want) in cases {
            assert_eq!(human_duration(secs), want, "{secs}s");
        }
    }
}
