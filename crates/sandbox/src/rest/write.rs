//! The writes that store an object (upstream's `endpoints/handlers/create.go`, `update.go`,
//! `patch.go`): the write options checked, the body decoded and its fields validated
//! (`fieldValidation`), the store's verb, admission's warnings, and the answer — transformed as
//! a read's, and for a dry run, the version actually stored.

use http::Response;
use serde_json::Value;

use super::ResponseBody;
use super::body::{json_bytes, parse_json, parse_object, yaml_duplicate_keys, yaml_to_json};
use super::call::Call;
use super::query::Query;
use super::request::Verb;
use super::response::{json_response, with_warnings};
use super::transform::transform;
use crate::SandboxState;
use crate::field_validation::{self, Directive};
use crate::patch::PatchType;
use crate::resource::ResourceDef;
use crate::resource::Subresource;
use crate::status::ApiError;
use crate::store::Store;

/// The write options of a create, update or patch, checked before the body is read; the
/// `fieldValidation` directive they give. Other verbs carry none.
pub(super) fn options(c: &Call) -> Result<Directive, ApiError> {
    let kind = match c.req.verb.name() {
        "create" => "CreateOptions",
        "update" => "UpdateOptions",
        "patch" => "PatchOptions",
        _ => return Ok(Directive::Warn),
    };
    let q = &c.req.query;
    let directive = Directive::parse(q.field_validation.as_deref(), kind)?;
    let ptype = matches!(c.req.verb, Verb::Patch).then(|| patch_type(&c.req.def, c.content_type()));
    validate_write_options(kind, q, ptype)?;
    Ok(directive)
}

/// Creates an object in a collection.
pub(super) fn create(c: &mut Call) -> Result<Response<ResponseBody>, ApiError> {
    let directive = options(c)?;
    let (def, q) = (c.req.def.as_ref(), &c.req.query);
    if def.namespaced && c.req.namespace.is_none() {
        return Err(ApiError::method_not_allowed());
    }
    let bytes = &c.bytes;
    let mut body = parse_object(bytes, c.content_type(), "create", def.kind)?;
    let mut warnings =
        field_validation::check(def, &mut body, json_bytes(bytes, c.content_type()), directive)?;
    let generate = crate::object_meta::meta_str(&body, "generateName").to_owned();
    let ns = c.req.ns();
    if let Some(escalation) = c.escalation(Some(&body))? {
        escalation.confirm(&body)?;
    }
    let mut created = c.store.create(def, ns, body, Some(&c.manager()))?;
    warnings.extend(def.warnings(&created, None));
    if c.store.may_warn(def, ns, false) {
        warnings.extend(c.store.admission_warnings(def, ns, &created, None));
    }
    // The record names what was created (the URL of a create names only the collection).
    c.record.name = crate::object_meta::meta_str(&created, "name").to_owned();
    if q.dry_run {
        // Nothing was stored: no uid, no version, and a generated name stays ungenerated.
        let meta = crate::object_meta::meta_mut(&mut created);
        meta.remove("uid");
        meta.remove("resourceVersion");
        if !generate.is_empty() {
            meta.insert("name".into(), Value::String(String::new()));
        }
    }
    // A write's answer is transformed as a read's (`transformResponseObject`).
    Ok(with_warnings(json_response(201, &transform(def, q, created, false)?), &warnings))
}

/// Replaces an object (or its part), creating it where the kind allows.
pub(super) fn update(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let directive = options(c)?;
    let (def, ns, name, sub) = (c.req.def.as_ref(), c.req.ns(), c.req.name(), c.req.sub);
    let mut body = parse_object(&c.bytes, c.content_type(), "update", def.kind)?;
    let mut warnings = if sub == Subresource::Main {
        field_validation::check(def, &mut body, json_bytes(&c.bytes, c.content_type()), directive)?
    } else {
        Vec::new()
    };
    if let Some(escalation) = c.escalation(Some(&body))? {
        escalation.confirm(&body)?;
    }
    let before = before_warned_write(c.store, def, ns, name, sub, &c.bytes);
    let (mut obj, created) = c.store.update_or_create(def, ns, name, body, sub, Some(&c.manager()))?;
    if let Some(before) = before {
        warnings.extend(def.warnings(&obj, before.as_ref()));
        warnings.extend(c.store.admission_warnings(def, ns, &obj, before.as_ref()));
    }
    if c.req.query.dry_run && !created {
        keep_stored_version(c.shared, def, ns, name, &mut obj);
    }
    let obj = transform(def, &c.req.query, obj, false)?;
    Ok(with_warnings(json_response(if created { 201 } else { 200 }, &obj), &warnings))
}

/// Patches an object (or its part) by any of the four patch types; an apply may create it.
pub(super) fn patch(c: &Call) -> Result<Response<ResponseBody>, ApiError> {
    let directive = options(c)?;
    let (def, ns, name, sub) = (c.req.def.as_ref(), c.req.ns(), c.req.name(), c.req.sub);
    let q = &c.req.query;
    let ptype = patch_type(def, c.content_type())?;
    let body = patch_body(ptype, &c.bytes)?;
    // An apply requires its own `fieldManager`; the User-Agent does not stand in.
    let writer = c.manager();
    let manager = if ptype == PatchType::Apply { q.field_manager.as_deref() } else { Some(writer.as_str()) };
    let mut warnings = Vec::new();
    // An apply's body is the object it makes, where there is none yet.
    let escalation = c.escalation((ptype == PatchType::Apply).then_some(&body))?;
    if let Some(e) = &escalation
        && ptype == PatchType::Apply
        && c.store.stored(def, ns, name).is_none()
    {
        e.confirm(&body)?;
    }
    if ptype == PatchType::Apply {
        field_validation::check_applied(def, &body)?;
    }
    let mut check = |patched: &mut Value| {
        warnings = if ptype == PatchType::Apply {
            strict_yaml(&c.bytes, directive)?
        } else {
            field_validation::check_patched(def, &c.bytes, ptype == PatchType::Json, patched, directive)?
        };
        escalation.as_ref().map_or(Ok(()), |e| e.confirm(patched))
    };
    let before = before_warned_write(c.store, def, ns, name, sub, &c.bytes);
    let (mut obj, created) = c.store.patch(def, ns, name, ptype, &body, sub, manager, q.force, &mut check)?;
    if let Some(before) = before {
        warnings.extend(def.warnings(&obj, before.as_ref()));
        warnings.extend(c.store.admission_warnings(def, ns, &obj, before.as_ref()));
    }
    if q.dry_run {
        keep_stored_version(c.shared, def, ns, name, &mut obj);
    }
    let obj = transform(def, q, obj, false)?;
    Ok(with_warnings(json_response(if created { 201 } else { 200 }, &obj), &warnings))
}

/// A patch's body: an apply configuration is YAML (JSON being YAML), decoded as upstream's
/// `applyPatcher` does (`yaml.Unmarshal`); the other types are JSON.
fn patch_body(ptype: PatchType, bytes: &[u8]) -> Result<Value, ApiError> {
    if ptype == PatchType::Apply {
        yaml_to_json(bytes).map_err(|e| {
            // `yaml.Unmarshal` wraps what `YAMLToJSON` says.
            ApiError::bad_request(format!("error decoding YAML: error converting YAML to JSON: {e}"))
        })
    } else {
        parse_json(bytes, "patch")
    }
}

/// An apply's body read again as strict YAML under `Strict` or `Warn` (`applyPatcher`, after the
/// apply): a key set twice is a 400 under `Strict`, a warning under `Warn`.
fn strict_yaml(bytes: &[u8], directive: Directive) -> Result<Vec<String>, ApiError> {
    if directive == Directive::Ignore {
        return Ok(Vec::new());
    }
    let duplicates = yaml_duplicate_keys(bytes);
    if duplicates.is_empty() {
        return Ok(Vec::new());
    }
    let why =
        format!("error converting YAML to JSON: yaml: unmarshal errors:\n  {}", duplicates.join("\n  "));
    if directive == Directive::Strict {
        return Err(ApiError::bad_request(format!("error strict decoding YAML: {why}")));
    }
    Ok(vec![why.replace('\n', " ")])
}

/// A dry-run write answers with the version actually stored (nothing new was stored).
fn keep_stored_version(shared: &SandboxState, def: &ResourceDef, ns: &str, name: &str, obj: &mut Value) {
    let stored = shared.store.get(def, ns, name, Subresource::Main).ok();
    let rv = stored.as_ref().map(|o| crate::object_meta::meta_str(o, "resourceVersion").to_owned());
    let meta = crate::object_meta::meta_mut(obj);
    match rv {
        Some(rv) => meta.insert("resourceVersion".into(), Value::String(rv)),
        None => meta.remove("resourceVersion"),
    };
}

/// A PATCH's type. A content type that is none is refused before any handler runs for a built-in
/// kind (go-restful's bare 415); a custom resource's handler (apiextensions', not go-restful)
/// refuses it in its patch handler's words, naming the types it takes.
fn patch_type(def: &ResourceDef, content_type: &str) -> Result<PatchType, ApiError> {
    PatchType::from_content_type(content_type).map_err(|e| {
        if def.custom().is_some() {
            ApiError::unsupported_media_type(PatchType::CUSTOM_RESOURCE_TYPES)
        } else {
            e
        }
    })
}

/// For a write the kind's strategy or admission may warn of, the object before it (`Some(None)`
/// when there is none yet); `None` when no warning can come of it.
fn before_warned_write(
    store: &Store,
    def: &ResourceDef,
    ns: &str,
    name: &str,
    sub: Subresource,
    body: &[u8],
) -> Option<Option<Value>> {
    (sub == Subresource::Main && (def.warns(body) || store.may_warn(def, ns, true)))
        .then(|| store.get(def, ns, name, Subresource::Main).ok())
}

/// Upstream's `ValidateCreateOptions` / `ValidateUpdateOptions` / `ValidatePatchOptions`
/// (`apimachinery/pkg/apis/meta/v1/validation/validation.go`), before the body is read: a
/// `fieldManager` of at most 128 bytes, all printable (`ValidateFieldManager`); for a patch,
/// `force` only on an apply, and an apply's required `fieldManager`. A 422 on the options kind
/// (`PatchOptions.meta.k8s.io ""`).
fn validate_write_options(
    kind: &str,
    q: &Query,
    ptype: Option<Result<PatchType, ApiError>>,
) -> Result<(), ApiError> {
    let mut causes: Vec<(String, String)> = crate::store::dry_run_causes(&q.dry_run_values);
    let manager = q.field_manager.as_deref().unwrap_or("");
    if let Some(Ok(ptype)) = ptype {
        if ptype != PatchType::Apply && q.force_given {
            causes.push(("force".into(), "Forbidden: may not be specified for non-apply patch".into()));
        } else if ptype == PatchType::Apply && manager.is_empty() {
            causes.push(("fieldManager".into(), "Required value: is required for apply patch".into()));
        }
    }
    if manager.len() > crate::managed_fields::MAX_MANAGER_LENGTH {
        causes.push((
            "fieldManager".into(),
            format!("Too long: may not be more than {} bytes", crate::managed_fields::MAX_MANAGER_LENGTH),
        ));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            causes.push((
                "fieldManager".into(),
                format!(
                    "Invalid value: {}: invalid character U+{:04X} (at position {i})",
                    crate::go_print::go_quote(manager),
                    u32::from(c)
                ),
            ));
        }
    }
    if causes.is_empty() { Ok(()) } else { Err(ApiError::invalid("meta.k8s.io", kind, "", &causes)) }
}
