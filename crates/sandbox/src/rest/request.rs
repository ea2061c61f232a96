//! A resource request, parsed once (upstream's `RequestInfo`, resolved further): the resource
//! its path names, its namespace, name and subresource, the [`Verb`] its method, path and query
//! make of it, and its query parameters. Every refusal of a malformed request — a path that
//! names nothing (404), an `Accept` that cannot be served (406), a query that does not parse
//! (400), a method the resource does not take (405) — comes from here, in upstream's words.

use std::sync::Arc;

use http::{Method, header};

use super::negotiate::{Render, Wire, negotiate};
use super::query::Query;
use crate::SandboxState;
use crate::record::RequestRecord;
use crate::resource::Subresource;
use crate::resource::{Action, Answer, ResourceDef};
use crate::resource::{Metrics, Review, Run};
use crate::status::ApiError;
use crate::store::Store;

/// What a resource request does: upstream's verbs, and what answers rather than stores.
/// `status`, `scale` and the subresources that own a part of the object (`finalize`,
/// `approval`, `ephemeralcontainers`) are read and written by `Get`, `Update` and `Patch` of
/// the [`Request::sub`] they name.
#[derive(Debug, Clone, Copy)]
pub(super) enum Verb {
    /// GET of one object (or one of its parts).
    Get,
    /// GET of a collection.
    List,
    /// GET of a collection with `watch=true`: a stream of changes.
    Watch,
    /// POST to a collection.
    Create,
    /// PUT of one object (or part), which may create it.
    Update,
    /// PATCH of one object (or part), which an apply may create.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// A subresource [`crate::actions`] answers and stores nothing of: `pods/binding`,
    /// `pods/eviction` and `serviceaccounts/token` created, `pods/log` read (`creates: false`).
    Act { action: &'static Action, creates: bool },
    /// A create of a resource answered from the request alone: access and token reviews,
    /// `bindings`.
    Review(Review),
    /// A get (`one`) or list of objects the server makes up (`componentstatuses`).
    Compute { objects: fn() -> Vec<serde_json::Value>, one: bool },
    /// A get (`one`) or list of resource metrics (`metrics.k8s.io`).
    Metrics { of: Metrics, one: bool },
    /// One of the streams a kubelet serves, by name (a pod's `exec`, `attach`, `portforward`).
    Connect(&'static str),
}

impl Verb {
    /// Its name as upstream's `RequestInfo` gives it, for the request log, faults and discovery's
    /// verb lists.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Get
            | Self::Act { creates: false, .. }
            | Self::Compute { one: true, .. }
            | Self::Metrics { one: true, .. } => "get",
            Self::List | Self::Compute { one: false, .. } | Self::Metrics { one: false, .. } => "list",
            Self::Watch => "watch",
            Self::Create | Self::Act { creates: true, .. } | Self::Review(_) => "create",
            Self::Update => "update",
            Self::Patch => "patch",
            Self::Delete => "delete",
            Self::DeleteCollection => "deletecollection",
            Self::Connect(_) => "connect",
        }
    }

    /// Whether it only reads (a dry run of it needs no scratch store).
    pub(super) fn reads(self) -> bool {
        matches!(self.name(), "get" | "list" | "watch")
    }

    /// The verb of `method` on `t`, before the resource's own answers are known; `None` for a
    /// method that has no verb there (a PUT of a collection, a POST to an object).
    fn of(method: &Method, t: &Target, watch: bool) -> Option<Self> {
        match (method, t.name.is_some()) {
            (&Method::GET, true) => Some(Self::Get),
            (&Method::GET, false) if watch => Some(Self::Watch),
            (&Method::GET, false) => Some(Self::List),
            (&Method::POST, false) => Some(Self::Create),
            // `pods/<name>/binding`, `/eviction`, `serviceaccounts/<name>/token`: a create of the
            // subresource.
            (&Method::POST, true) if matches!(t.sub, Subresource::Action(_)) => Some(Self::Create),
            (&Method::PUT, true) => Some(Self::Update),
            (&Method::PATCH, true) => Some(Self::Patch),
            (&Method::DELETE, true) => Some(Self::Delete),
            (&Method::DELETE, false) => Some(Self::DeleteCollection),
            _ => None,
        }
    }

    /// The verb as what serves it: an acting subresource, a review, computed objects, or the
    /// store.
    fn served_by(self, t: &Target) -> Self {
        if let Subresource::Action(action) = t.sub
            && !matches!(action.run, Run::Owns(_))
        {
            return Self::Act { action, creates: matches!(self, Self::Create) };
        }
        match t.def.answer() {
            Answer::Stored => self,
            Answer::Review(review) => Self::Review(review),
            Answer::Computed(objects) => Self::Compute { objects, one: matches!(self, Self::Get) },
            Answer::Metrics(of) => Self::Metrics { of, one: matches!(self, Self::Get) },
        }
    }
}

/// A resource request, parsed.
#[derive(Debug)]
pub(super) struct Request {
    pub(super) verb: Verb,
    pub(super) def: Arc<ResourceDef>,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) sub: Subresource,
    pub(super) query: Query,
}

impl Request {
    /// Parses a request to the resource `t` its path names, recording what it asks as it goes (the API server's
    /// request info is known before anything is validated).
    pub(super) fn parse(
        shared: &SandboxState,
        parts: &http::request::Parts,
        t: Target,
        negotiated: Option<(Render, Wire)>,
        record: &mut RequestRecord,
    ) -> Result<Self, ApiError> {
        if let Some(stream) = t.stream {
            return Ok(t.into_request(Verb::Connect(stream), Query::default()));
        }
        t.record(record);
        let (render, wire) = negotiated.ok_or_else(ApiError::not_acceptable)?;
        let mut query = Query::parse(parts.uri.query(), &t.def)?;
        let verb = Verb::of(&parts.method, &t, query.watch);
        record.verb = verb.map_or("unsupported", Verb::name).to_owned();
        if !shared.sharded_list_watch {
            query.list.shard = None;
        }
        if query.watch && query.send_initial_events {
            query.allow_streaming_list(shared.streaming_lists)?;
        }
        query.as_table = matches!(render, Render::Table(_));
        query.render = render;
        query.wire = wire;
        let Some(verb) = verb else {
            // The custom resource handler takes a write of its collection, then wants a name.
            if t.def.custom().is_some() && matches!(parts.method, Method::PATCH | Method::PUT) {
                return Err(ApiError::bad_request("name must be provided"));
            }
            return Err(ApiError::method_not_allowed());
        };
        if !t.allows(verb) {
            return Err(ApiError::method_not_allowed());
        }
        let verb = verb.served_by(&t);
        Ok(t.into_request(verb, query))
    }

    /// The namespace, `""` for a cluster-scoped resource or across namespaces.
    pub(super) fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    /// The object's name, `""` for a collection.
    pub(super) fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

/// What a resource path points at.
#[derive(Debug)]
pub(super) struct Target {
    pub(super) def: Arc<ResourceDef>,
    namespace: Option<String>,
    name: Option<String>,
    sub: Subresource,
    /// The kubelet stream named after the object's name, if one is.
    stream: Option<&'static str>,
}

impl Target {
    /// The shape and encoding the request's `Accept` asks answers in, of what this target
    /// serves; `None` when nothing it asks can be served (a 406).
    pub(super) fn negotiate(&self, parts: &http::request::Parts) -> Option<(Render, Wire)> {
        let accept = parts.headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
        negotiate(accept, self.def.custom().is_none(), self.has_tables())
    }

    /// Whether its storage converts objects to Tables: not a review's, nor an acting
    /// subresource's (a binding, an eviction, a token, a log), which upstream serves without a
    /// table convertor.
    fn has_tables(&self) -> bool {
        let acts = matches!(self.sub, Subresource::Action(a) if !matches!(a.run, Run::Owns(_)));
        !acts && !matches!(self.def.answer(), Answer::Review(_))
    }

    /// The resource, namespace, name and subresource `path` names; 404 when it names none.
    pub(super) fn parse(store: &Store, path: &str) -> Result<Self, ApiError> {
        let segs: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
        let (group, version, rest) = match segs.as_slice() {
            ["api", v, rest @ ..] => ("", *v, rest),
            ["apis", g, v, rest @ ..] => (*g, *v, rest),
            _ => return Err(ApiError::no_route(path)),
        };
        let find = |plural: &str| store.find(group, version, plural);
        let (def, namespace, name, subres) = match rest {
            ["namespaces", ns, plural, tail @ ..] if find(plural).is_some_and(|d| d.namespaced) => (
                find(plural).expect("checked"),
                Some((*ns).to_owned()),
                tail.first().map(|s| (*s).to_owned()),
                tail.get(1),
            ),
            [plural, tail @ ..] => {
                let def = find(plural).ok_or_else(|| ApiError::no_route(path))?;
                if def.namespaced && !tail.is_empty() {
                    return Err(ApiError::no_route(path));
                }
                (def, None, tail.first().map(|s| (*s).to_owned()), tail.get(1))
            }
            [] => return Err(ApiError::no_route(path)),
        };
        if rest.len() > if namespace.is_some() { 5 } else { 3 } {
            return Err(ApiError::no_route(path));
        }
        let mut t = Self { def, namespace, name, sub: Subresource::Main, stream: None };
        if let Some(s) = subres {
            t.subresource(s, path)?;
        }
        Ok(t)
    }

    /// Resolves the subresource `s` named after the object's name.
    fn subresource(&mut self, s: &str, path: &str) -> Result<(), ApiError> {
        let def = &self.def;
        self.sub = match s {
            "status" if def.status_subresource => Subresource::Status,
            "scale" if def.scale.is_some() => Subresource::Scale,
            _ => match def.actions().iter().find(|a| a.name == s) {
                Some(a) => Subresource::Action(a),
                // The custom resource handler answers any other subresource as a missing object.
                None if def.custom().is_some() => {
                    return Err(ApiError::not_found(
                        def.group,
                        def.plural,
                        self.name.as_deref().unwrap_or(""),
                    ));
                }
                None => match def.kubelet_streams().iter().find(|k| **k == s) {
                    Some(stream) => {
                        self.stream = Some(stream);
                        Subresource::Main
                    }
                    None => return Err(ApiError::no_route(path)),
                },
            },
        };
        Ok(())
    }

    /// Records what was asked.
    fn record(&self, record: &mut RequestRecord) {
        record.group = self.def.group.to_owned();
        record.resource = self.def.plural.to_owned();
        record.subresource = self.sub.name().to_owned();
        record.namespace = self.namespace.clone().unwrap_or_default();
        record.name = self.name.clone().unwrap_or_default();
    }

    /// Whether the resource (or the subresource named) answers `verb`.
    fn allows(&self, verb: Verb) -> bool {
        match self.sub {
            Subresource::Main => self.def.verbs().contains(&verb.name()),
            Subresource::Status | Subresource::Scale => {
                matches!(verb, Verb::Get | Verb::Update | Verb::Patch)
            }
            Subresource::Action(a) => a.verbs.contains(&verb.name()),
        }
    }

    fn into_request(self, verb: Verb, query: Query) -> Request {
        let Self { def, namespace, name, sub, .. } = self;
        Request { verb, def, namespace, name, sub, query }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        let store = Store::new(crate::StoreConfig::default());
        let parse = |p: &str| Target::parse(&store, p);
        let t = parse("/api/v1/namespaces/default/configmaps/web").unwrap();
        assert_eq!(
            (t.def.plural, t.namespace.as_deref(), t.name.as_deref()),
            ("configmaps", Some("default"), Some("web"))
        );
        let t = parse("/apis/apps/v1/namespaces/default/deployments/web/scale").unwrap();
        assert_eq!(t.sub, Subresource::Scale);
        let t = parse("/api/v1/namespaces/kube-system").unwrap();
        assert_eq!((t.def.plural, t.name.as_deref()), ("namespaces", Some("kube-system")));
        let t = parse("/apis/apps/v1/deployments").unwrap();
        assert!(t.namespace.is_none() && t.name.is_none());
        let t = parse("/api/v1/namespaces/default/pods/web/exec").unwrap();
        assert_eq!((t.sub, t.stream), (Subresource::Main, Some("exec")));
        for bad in [
            "/api/v1/widgets",
            "/apis/apps/v2/deployments",
            "/healthz",
            "/api/v1/namespaces/default/configmaps/web/scale",
            "/api/v1/configmaps/web",
            "/api/v1/namespaces/default/configmaps/web/exec",
        ] {
            assert_eq!(parse(bad).unwrap_err().code, 404, "{bad}");
        }
    }

    #[test]
    fn verbs_are_named_as_upstream() {
        let store = Store::new(crate::StoreConfig::default());
        let target = |p: &str| Target::parse(&store, p).unwrap();
        let binding = target("/api/v1/namespaces/default/pods/web/binding");
        let verb = Verb::of(&Method::POST, &binding, false).unwrap().served_by(&binding);
        assert!(matches!(verb, Verb::Act { creates: true, .. }), "{verb:?}");
        assert_eq!(verb.name(), "create");
        let log = target("/api/v1/namespaces/default/pods/web/log");
        assert_eq!(Verb::of(&Method::GET, &log, false).unwrap().served_by(&log).name(), "get");
        let pods = target("/api/v1/namespaces/default/pods");
        assert!(matches!(Verb::of(&Method::GET, &pods, true), Some(Verb::Watch)));
        assert!(Verb::of(&Method::PUT, &pods, false).is_none());
        let cs = target("/api/v1/componentstatuses");
        let verb = Verb::of(&Method::GET, &cs, false).unwrap().served_by(&cs);
        assert!(matches!(verb, Verb::Compute { one: false, .. }));
        assert_eq!(verb.name(), "list");
    }
}
