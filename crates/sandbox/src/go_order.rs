//! The order upstream writes an object's fields in: Go's `encoding/json` writes a struct's fields
//! in the order they are declared, and a map's keys sorted. The sandbox keeps objects as
//! `serde_json::Value`s, whose maps are sorted; this module writes them in the declared order
//! instead, so a body is byte for byte what a v1.32 kube-apiserver writes (`kind`, `apiVersion`,
//! `metadata` with `name` first, `spec`, `status`; a `Status`'s `metadata`, `status`, `message`,
//! `reason`, `details`, `code`).
//!
//! `go_order.json` holds, for each struct type of the built-in API (`k8s.io/api`, apimachinery's
//! `meta/v1`, the CRD and APIService types, metrics-server's `metrics.k8s.io`, as released in
//! v1.32), its JSON field names in
//! declaration order (embedded `inline` structs spliced in where they are embedded), each with
//! the type of its value when that is a struct again (behind `list:` and `map:` for slices and
//! maps of it); and which struct each `apiVersion`/`kind` names. Types that write themselves
//! (`Time`, `IntOrString`, `RawExtension`, a CRD schema's `items`) are not in it: what is under
//! them is written sorted, as are custom resources (upstream writes them as maps). A field the
//! table does not know (one added after v1.32) comes after the known ones, sorted.
//!
//! Every JSON body the REST layer writes goes through [`GoOrdered`]: single objects and
//! `Status`es, list items, watch events.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Map, Value};

/// A field's value: a struct of the table, under the slices and maps that hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layer {
    List,
    Map,
}

/// Where a value's shape is known: the layers still to go through, then the struct.
#[derive(Debug, Clone, Copy)]
struct Shape<'t> {
    layers: &'t [Layer],
    ty: usize,
}

/// A field of a struct type: where it is declared, and its value's shape when that is known.
#[derive(Debug)]
struct Field {
    position: usize,
    shape: Option<(Box<[Layer]>, usize)>,
}

/// FNV-1a: the table's keys are a fixed set of short field names, looked up once per field
/// written, where SipHash's setup cost shows.
#[derive(Default)]
struct Fnv(u64);

impl std::hash::Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 { 0xcbf2_9ce4_8422_2325 } else { self.0 };
        for b in bytes {
            h = (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

type FnvMap<K, V> = HashMap<K, V, std::hash::BuildHasherDefault<Fnv>>;

/// A struct type: its fields by JSON name.
#[derive(Debug, Default)]
struct Type {
    fields: FnvMap<Box<str>, Field>,
}

/// The table, parsed once.
#[derive(Debug, Default)]
struct Table {
    types: Vec<Type>,
    /// `apiVersion` → `kind` → type.
    kinds: FnvMap<Box<str>, FnvMap<Box<str>, usize>>,
}

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let raw: Value = serde_json::from_str(include_str!("go_order.json")).expect("go_order.json is JSON");
        let names: Vec<&str> =
            raw["types"].as_object().map(|t| t.keys().map(String::as_str).collect()).unwrap_or_default();
        let index: HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let shape = |s: &str| -> Option<(Box<[Layer]>, usize)> {
            let mut layers = Vec::new();
            let mut rest = s;
            loop {
                if let Some(r) = rest.strip_prefix("list:") {
                    layers.push(Layer::List);
                    rest = r;
                } else if let Some(r) = rest.strip_prefix("map:") {
                    layers.push(Layer::Map);
                    rest = r;
                } else {
                    break;
                }
            }
            Some((layers.into_boxed_slice(), *index.get(rest)?))
        };
        let types = names
            .iter()
            .map(|n| {
                let fields = raw["types"][*n].as_array().map(Vec::as_slice).unwrap_or_default();
                let fields = fields
                    .iter()
                    .enumerate()
                    .filter_map(|(pos, f)| {
                        let name = f.get(0)?.as_str()?;
                        let shape = f.get(1).and_then(Value::as_str).and_then(shape);
                        Some((name.into(), Field { position: pos, shape }))
                    })
                    .collect();
                Type { fields }
            })
            .collect();
        let mut kinds: FnvMap<Box<str>, FnvMap<Box<str>, usize>> = FnvMap::default();
        for (k, v) in raw["kinds"].as_object().into_iter().flatten() {
            let (Some((api_version, kind)), Some(ty)) =
                (k.rsplit_once('/'), v.as_str().and_then(|v| index.get(v)))
            else {
                continue;
            };
            kinds.entry(api_version.into()).or_default().insert(kind.into(), *ty);
        }
        Table { types, kinds }
    })
}

/// The struct an `apiVersion` and `kind` name, if the table has it.
fn kind_type(api_version: &str, kind: &str) -> Option<usize> {
    table().kinds.get(api_version)?.get(kind).copied()
}

/// A JSON value written in Go's field order.
///
/// ```ignore
/// let body = serde_json::to_vec(&GoOrdered::object(&pod))?;
/// assert!(body.starts_with(br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"#));
/// ```
pub(crate) struct GoOrdered<'a> {
    value: &'a Value,
    shape: Option<Shape<'static>>,
}

impl<'a> GoOrdered<'a> {
    /// An object of the API, its type found by its own `apiVersion` and `kind` (written sorted,
    /// as upstream writes a custom resource, when they name no built-in type).
    pub(crate) fn object(value: &'a Value) -> Self {
        let s = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or("");
        Self { value, shape: kind_type(s("apiVersion"), s("kind")).map(|ty| Shape { layers: &[], ty }) }
    }
}

impl Serialize for GoOrdered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        write(self.value, self.shape, s)
    }
}

/// An object of the resource `api_version`/`kind` whose `kind` and `apiVersion` are written as
/// given, whatever the value holds (a stored object, presented in the version asked for).
pub(crate) struct Stamped<'a> {
    /// The object.
    pub(crate) value: &'a Value,
    /// The `apiVersion` it is presented in.
    pub(crate) api_version: &'a str,
    /// Its `kind`.
    pub(crate) kind: &'a str,
}

impl Serialize for Stamped<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(fields) = self.value.as_object() else { return self.value.serialize(s) };
        let own = |k: &String| k != "kind" && k != "apiVersion";
        let n = fields.keys().filter(|k| own(k)).count() + 2;
        let rest = fields.iter().filter(|(k, _)| own(k)).map(|(k, v)| (k.as_str(), v));
        let stamp = [("kind", self.kind), ("apiVersion", self.api_version)];
        match kind_type(self.api_version, self.kind) {
            // `TypeMeta` is every kind's first field: the stamp goes first.
            Some(ty) => write_struct(&stamp, rest, n, ty, s),
            // A custom resource is a map: the stamp goes where its keys sort.
            None => {
                let mut m = s.serialize_map(Some(n))?;
                let mut pending = [stamp[1], stamp[0]].into_iter().peekable();
                for (k, v) in rest {
                    while let Some((sk, sv)) = pending.next_if(|(sk, _)| *sk < k) {
                        m.serialize_entry(sk, sv)?;
                    }
                    m.serialize_entry(k, &GoOrdered { value: v, shape: None })?;
                }
                for (sk, sv) in pending {
                    m.serialize_entry(sk, sv)?;
                }
                m.end()
            }
        }
    }
}

fn write<S: Serializer>(value: &Value, shape: Option<Shape<'static>>, s: S) -> Result<S::Ok, S::Error> {
    match (value, shape) {
        (Value::Object(m), Some(Shape { layers: [Layer::Map, rest @ ..], ty })) => {
            write_map(m, Some(Shape { layers: rest, ty }), s)
        }
        (Value::Object(m), Some(Shape { layers: [], ty })) => {
            write_struct(&[], m.iter().map(|(k, v)| (k.as_str(), v)), m.len(), ty, s)
        }
        (Value::Object(m), _) => write_map(m, None, s),
        (Value::Array(items), Some(Shape { layers: [Layer::List, rest @ ..], ty })) => {
            let mut seq = s.serialize_seq(Some(items.len()))?;
            for v in items {
                seq.serialize_element(&GoOrdered { value: v, shape: Some(Shape { layers: rest, ty }) })?;
            }
            seq.end()
        }
        (Value::Array(items), _) => {
            let mut seq = s.serialize_seq(Some(items.len()))?;
            for v in items {
                seq.serialize_element(&GoOrdered { value: v, shape: None })?;
            }
            seq.end()
        }
        (scalar, _) => scalar.serialize(s),
    }
}

/// A map (or a value whose shape is unknown): keys sorted, as `Value` keeps them and Go writes
/// map keys.
fn write_map<S: Serializer>(
    m: &Map<String, Value>,
    values: Option<Shape<'static>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let mut out = s.serialize_map(Some(m.len()))?;
    for (k, v) in m {
        out.serialize_entry(k, &GoOrdered { value: v, shape: values })?;
    }
    out.end()
}

/// A struct's fields: `stamp` first (its `kind` and `apiVersion`, when written as presented),
/// then `entries` (`n` fields in all) in their declared order, those the table does not know
/// after them, sorted.
fn write_struct<'v, S: Serializer>(
    stamp: &[(&str, &str)],
    entries: impl Iterator<Item = (&'v str, &'v Value)>,
    n: usize,
    ty: usize,
    s: S,
) -> Result<S::Ok, S::Error> {
    /// Most objects have fewer fields than this: they are ordered on the stack.
    const INLINE: usize = 32;
    static NULL: Value = Value::Null;
    let t = &table().types[ty];
    let mut out = s.serialize_map(Some(n))?;
    for (k, v) in stamp {
        out.serialize_entry(k, v)?;
    }
    let n = n - stamp.len();
    let mut inline: [Placed<'v>; INLINE] =
        [Placed { position: 0, seq: 0, key: "", value: &NULL, field: None }; INLINE];
    let mut spilled: Vec<Placed<'v>> = Vec::new();
    let placed: &mut [Placed<'v>] = if n <= INLINE {
        &mut inline[..n]
    } else {
        spilled.resize(n, inline[0]);
        &mut spilled
    };
    // Each field looked up once; the unknown ones after the known, in the sorted order they came.
    for (seq, ((key, value), slot)) in entries.zip(placed.iter_mut()).enumerate() {
        let field = t.fields.get(key);
        *slot = Placed { position: field.map_or(usize::MAX, |f| f.position), seq, key, value, field };
    }
    placed.sort_unstable_by_key(|p| (p.position, p.seq));
    for p in placed.iter() {
        let shape = p.field.and_then(|f| f.shape.as_ref()).map(|(layers, ty)| Shape { layers, ty: *ty });
        out.serialize_entry(p.key, &GoOrdered { value: p.value, shape })?;
    }
    out.end()
}

/// A field of an object being written, with where its type declares it.
#[derive(Clone, Copy)]
struct Placed<'v> {
    position: usize,
    seq: usize,
    key: &'v str,
    value: &'v Value,
    field: Option<&'static Field>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(v: &Value) -> String {
        serde_json::to_string(&GoOrdered::object(v)).unwrap()
    }

    #[test]
    fn an_object_is_written_in_its_types_order() {
        let pod = json!({
            "status": { "phase": "Pending" },
            "spec": { "restartPolicy": "Always", "containers": [{ "image": "nginx", "name": "c" }] },
            "metadata": { "uid": "u", "namespace": "default", "name": "p", "labels": { "b": "1", "a": "2" } },
            "kind": "Pod", "apiVersion": "v1",
        });
        assert_eq!(
            text(&pod),
            r#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"default","uid":"u","labels":{"a":"2","b":"1"}},"spec":{"containers":[{"name":"c","image":"nginx"}],"restartPolicy":"Always"},"status":{"phase":"Pending"}}"#
        );
    }

    #[test]
    fn a_status_is_written_as_upstream_writes_it() {
        let status = json!({
            "apiVersion": "v1", "code": 404, "details": { "kind": "pods", "name": "x" }, "kind": "Status",
            "message": "pods \"x\" not found", "metadata": {}, "reason": "NotFound", "status": "Failure",
        });
        assert_eq!(
            text(&status),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#
        );
    }

    #[test]
    fn custom_resources_and_unknown_fields_are_written_sorted() {
        let widget = json!({ "kind": "Widget", "apiVersion": "example.com/v1", "spec": { "b": 1, "a": 2 }, "metadata": { "name": "w" } });
        assert_eq!(
            text(&widget),
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"a":2,"b":1}}"#
        );
        let config = json!({ "kind": "ConfigMap", "apiVersion": "v1", "zNew": true, "aNew": 1, "data": {}, "metadata": {} });
        assert_eq!(
            text(&config),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{},"data":{},"aNew":1,"zNew":true}"#
        );
    }

    #[test]
    fn an_object_with_more_fields_than_the_stack_holds_is_ordered_too() {
        let mut config = json!({ "kind": "ConfigMap", "apiVersion": "v1", "data": {}, "metadata": {} });
        for i in 0..40 {
            config[format!("x{i:02}")] = json!(i);
        }
        let text = text(&config);
        assert!(
            text.starts_with(
                r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{},"data":{},"x00":0,"x01":1"#
            ),
            "{text}"
        );
        assert!(text.ends_with(r#""x39":39}"#), "{text}");
    }

    #[test]
    fn a_stamped_object_takes_the_kind_it_is_presented_as() {
        let stored = json!({ "spec": { "replicas": 1 }, "metadata": { "name": "d" }, "apiVersion": "apps/v1", "kind": "Deployment" });
        let body =
            serde_json::to_string(&Stamped { value: &stored, api_version: "apps/v1", kind: "Deployment" })
                .unwrap();
        assert_eq!(
            body,
            r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"d"},"spec":{"replicas":1}}"#
        );
    }

    #[test]
    fn a_stamped_custom_resource_has_its_stamp_where_the_keys_sort() {
        let stored = json!({ "spec": { "b": 1 }, "metadata": { "name": "w" }, "kind": "Old" });
        let body =
            serde_json::to_string(&Stamped { value: &stored, api_version: "example.com/v1", kind: "Widget" })
                .unwrap();
        assert_eq!(
            body,
            r#"{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"b":1}}"#
        );
    }

    #[test]
    fn every_built_in_kind_the_sandbox_serves_has_its_order() {
        let missing: Vec<String> = crate::catalog::RESOURCES
            .iter()
            .filter(|def| kind_type(&def.api_version(), def.kind).is_none())
            .map(|def| format!("{}/{}", def.api_version(), def.kind))
            .collect();
        assert!(missing.is_empty(), "{missing:?}");
    }
}
