//! Watch streams (upstream's `endpoints/handlers/watch.go` and the cache watcher): the initial
//! events, or the history since the version asked, then the live changes a selector sees —
//! one JSON line or protobuf frame each, as the object, a Table row or its metadata — with bookmarks, the end of
//! a streaming list, timeouts, and the faults a test injects (forced expiry, cuts, pauses).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};

use super::ResponseBody;
use super::negotiate::{Render, Wire};
use super::query::Query;
use super::request::Request;
use super::response::stream_response;
use crate::SandboxState;
use crate::resource::ResourceDef;
use crate::status::ApiError;
use crate::store::{Change, ChangeType, ListQuery, WatchStart};

/// Opens a watch: a 200 whose body streams events until the client leaves, the timeout passes
/// or the stream is cut. A version too old is one ERROR event, as upstream answers it.
pub(super) fn watch(shared: &Arc<SandboxState>, req: Request) -> Result<Response<ResponseBody>, ApiError> {
    let (tx, rx) = mpsc::channel::<Bytes>(1024);
    let framer = Framer(req.query.wire);
    if shared.faults.take_forced_expiry() {
        let e = ApiError::expired("too old resource version: forced by the sandbox's fault injection");
        let _ = tx.try_send(framer.frame("ERROR", &e.to_status()));
        return Ok(stream_response(rx, framer.content_type()));
    }
    let Request { def, namespace, query, .. } = req;
    let start = match shared.store.watch(&def, namespace.as_deref(), &query.list, query.send_initial_events) {
        Ok(s) => s,
        Err(e) if e.code == 410 => {
            // The API server answers an expired watch with 200 and one ERROR event.
            let _ = tx.try_send(framer.frame("ERROR", &e.to_status()));
            return Ok(stream_response(rx, framer.content_type()));
        }
        Err(e) => return Err(e),
    };
    // Taken now: a cut ordered once the watch is answered ends it.
    let cut_seen = shared.faults.cut_generation();
    let watcher = Watcher { shared: Arc::clone(shared), def, namespace, query, tx, headers: true, framer };
    tokio::spawn(watcher.run(start, cut_seen));
    Ok(stream_response(rx, framer.content_type()))
}

/// One open watch, writing its events to `tx`.
struct Watcher {
    shared: Arc<SandboxState>,
    def: Arc<ResourceDef>,
    namespace: Option<String>,
    query: Query,
    tx: mpsc::Sender<Bytes>,
    /// Whether the next Table still carries its column definitions (the first event's only, as
    /// the API server's do).
    headers: bool,
    framer: Framer,
}

impl Watcher {
    /// Sends the initial events, then follows the store's changes.
    async fn run(mut self, start: WatchStart, cut_seen: u64) {
        let WatchStart { initial, initial_events_end, rv, feed } = start;
        // Every initial event is at or below the store's version when the watch began.
        for retained in &initial {
            let c = retained.thaw(!self.query.list.selects_all());
            if !self.send_change(&c).await {
                return;
            }
        }
        if initial_events_end && self.tx.send(self.bookmark(rv, true)).await.is_err() {
            return;
        }
        self.follow(feed, rv, cut_seen).await;
    }

    /// The live changes after `rv`, with bookmarks, until the client leaves, the timeout
    /// passes, the stream is cut or falls behind, or the resource goes.
    async fn follow(&mut self, mut feed: broadcast::Receiver<Arc<Change>>, mut rv: u64, cut_seen: u64) {
        let shared = Arc::clone(&self.shared);
        let timeout = tokio::time::sleep(self.query.timeout.unwrap_or(Duration::from_secs(365 * 24 * 3600)));
        tokio::pin!(timeout);
        let mut ticks = tokio::time::interval(shared.bookmark_interval);
        ticks.tick().await;
        loop {
            tokio::select! {
                // A cut comes first: nothing committed after `cut_watches` reaches this stream.
                biased;
                () = shared.faults.cut_after(cut_seen) => return,
                change = feed.recv() => match change {
                    Ok(c) if c.rv <= rv => {}
                    // The CRD defining this resource is gone: so is the resource, and the stream
                    // ends, as upstream's watches end when the CRD's storage is torn down.
                    Ok(c) if c.kind == ChangeType::Deleted && ends_resource(&self.def, &c) => return,
                    Ok(c) => {
                        shared.faults.watch_events_flow(self.def.plural).await;
                        rv = c.rv;
                        if !self.send_change(&c).await {
                            return;
                        }
                    }
                    // Too slow to keep up, or the store is gone: end the stream; the client
                    // resumes from the last version it saw, as with a real API server.
                    Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return,
                },
                _ = ticks.tick(), if self.query.allow_bookmarks => {
                    shared.faults.watch_events_flow(self.def.plural).await;
                    if self.tx.send(self.bookmark(rv, false)).await.is_err() {
                        return;
                    }
                }
                () = &mut timeout => return,
                () = self.tx.closed() => return,
            }
        }
    }

    /// Sends the event `c` is to this watch, if any; `false` once the client has gone.
    async fn send_change(&mut self, c: &Change) -> bool {
        let Some((kind, mut obj)) = event_for(&self.def, self.namespace.as_deref(), &self.query.list, c)
        else {
            return true;
        };
        // A conversion webhook is awaited here, not called where the event is written.
        if self.def.conversion_webhook().is_some() {
            obj = match obj.presented_async(&self.def).await {
                Ok(v) => EventObject::Made(v),
                Err(e) => {
                    // As upstream's watch ends on an object it cannot encode: the client sees
                    // why, and lists again.
                    let _ = self.tx.send(self.framer.frame("ERROR", &e.to_status())).await;
                    return false;
                }
            };
        }
        let line = self.render(kind, obj);
        self.tx.send(line).await.is_ok()
    }

    /// An event's line, its object in the shape negotiated.
    fn render(&mut self, kind: &str, obj: EventObject) -> Bytes {
        let def = &self.def;
        let framer = self.framer;
        let whole =
            !matches!(self.query.render, Render::Partial(_) | Render::PartialList(_)) && !self.query.as_table;
        if let (true, Wire::Json, EventObject::Stored(o)) = (whole, framer.0, &obj) {
            // Written straight from the stored object, without a copy when it needs no conversion.
            let mut failed = None;
            let line = frame_with(kind, |out| failed = def.write_presented(o, out).err());
            return failed.map_or(line, |e| framer.frame("ERROR", &e.to_status()));
        }
        let obj = match obj.into_presented(def) {
            Ok(v) => v,
            Err(e) => return framer.frame("ERROR", &e.to_status()),
        };
        if let Render::Partial(version) | Render::PartialList(version) = self.query.render {
            framer.frame(
                kind,
                &json!({ "kind": "PartialObjectMetadata", "apiVersion": version, "metadata": obj["metadata"] }),
            )
        } else if self.query.as_table {
            let rv = crate::object_meta::meta_str(&obj, "resourceVersion").to_owned();
            let mut t = super::table::table(def, &[obj], &rv, self.headers);
            if let Render::Table(version) = self.query.render {
                t["apiVersion"] = json!(version);
            }
            self.headers = false;
            framer.frame(kind, &t)
        } else {
            framer.frame(kind, &obj)
        }
    }

    /// A bookmark: the resource's kind with only a version, or its metadata when that is
    /// what the watch asked for.
    fn bookmark(&self, rv: u64, initial_end: bool) -> Bytes {
        let mut meta = json!({ "resourceVersion": rv.to_string() });
        if initial_end {
            meta["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let (kind, api_version) = match self.query.render {
            Render::Partial(version) | Render::PartialList(version) => {
                ("PartialObjectMetadata", version.to_owned())
            }
            _ => (self.def.kind, self.def.api_version()),
        };
        self.framer.frame("BOOKMARK", &json!({ "kind": kind, "apiVersion": api_version, "metadata": meta }))
    }
}

/// How a watch writes its events: JSON lines, or protobuf's length-prefixed frames.
#[derive(Debug, Clone, Copy)]
struct Framer(Wire);

impl Framer {
    fn content_type(self) -> &'static str {
        match self.0 {
            Wire::Json => "application/json",
            Wire::Protobuf => super::protobuf::STREAM_CONTENT_TYPE,
        }
    }

    fn frame(self, kind: &str, object: &Value) -> Bytes {
        match self.0 {
            Wire::Json => frame(kind, object),
            Wire::Protobuf => super::protobuf::watch_frame(kind, object).map_or_else(
                |e| {
                    // Not expected of a built-in kind; the client sees why and starts again.
                    let why = format!("unable to encode watch object {}: {e}", object["kind"]);
                    let status = ApiError::internal(why).to_status();
                    super::protobuf::watch_frame("ERROR", &status).map(Bytes::from).unwrap_or_default()
                },
                Bytes::from,
            ),
        }
    }
}

/// What a watch event carries.
enum EventObject {
    /// A stored object, written out as its resource presents it.
    Stored(Arc<Value>),
    /// An object's content before a change that took it out of the watch's selection, sent
    /// as DELETED at the change's version.
    Previous(Arc<Value>, u64),
    /// An object made for the event, already presented.
    Made(Value),
}

impl EventObject {
    fn into_presented(self, def: &ResourceDef) -> Result<Value, ApiError> {
        match self {
            Self::Stored(o) => def.present(&o),
            Self::Previous(o, rv) => Ok(at_version(def.present(&o)?, rv)),
            Self::Made(v) => Ok(v),
        }
    }

    /// [`into_presented`](Self::into_presented), a conversion webhook awaited.
    async fn presented_async(self, def: &ResourceDef) -> Result<Value, ApiError> {
        match self {
            Self::Stored(o) => def.present_async((*o).clone()).await,
            Self::Previous(o, rv) => Ok(at_version(def.present_async((*o).clone()).await?, rv)),
            Self::Made(v) => Ok(v),
        }
    }
}

/// `obj` with `metadata.resourceVersion` set to `rv`.
fn at_version(mut obj: Value, rv: u64) -> Value {
    crate::object_meta::meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv.to_string()));
    obj
}

/// How a change looks to one watch: ADDED / MODIFIED / DELETED, or nothing, taking selector
/// transitions into account (an object that stops matching is DELETED for this watch).
fn event_for(
    def: &ResourceDef,
    ns: Option<&str>,
    q: &ListQuery,
    c: &Change,
) -> Option<(&'static str, EventObject)> {
    if c.storage != def.storage {
        return None;
    }
    let obj_ns = crate::object_meta::meta_str(&c.object, "namespace");
    if ns.is_some_and(|ns| ns != obj_ns) {
        return None;
    }
    // As upstream's cache watcher (`storage/cacher/cache_watcher.go`, `convertToWatchEvent`): an
    // object that stops matching is DELETED with its *previous* content, at the change's version.
    let deleted = c.kind == ChangeType::Deleted;
    let now = !deleted && q.matches(&c.object);
    let before = if deleted { q.matches(&c.object) } else { c.old.as_ref().is_some_and(|o| q.matches(o)) };
    let stored = || EventObject::Stored(Arc::clone(&c.object));
    match (before, now) {
        (false, true) => Some(("ADDED", stored())),
        (true, true) => Some(("MODIFIED", stored())),
        (true, false) if deleted => Some(("DELETED", stored())),
        (true, false) => Some(("DELETED", EventObject::Previous(Arc::clone(c.old.as_ref()?), c.rv))),
        (false, false) => None,
    }
}

/// One line of a watch stream: `type` first, then `object`, as the API server writes them.
fn frame_with(kind: &str, write_object: impl FnOnce(&mut Vec<u8>)) -> Bytes {
    let mut line = Vec::with_capacity(1024);
    line.extend_from_slice(b"{\"type\":");
    // A `&str` always serialises.
    let _ = serde_json::to_writer(&mut line, kind);
    line.extend_from_slice(b",\"object\":");
    write_object(&mut line);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

fn frame(kind: &str, object: &Value) -> Bytes {
    frame_with(kind, |out| {
        let _ = serde_json::to_writer(out, &crate::go_order::GoOrdered::object(object));
    })
}

/// Whether `c` removes the CRD that defines `def`.
fn ends_resource(def: &ResourceDef, c: &Change) -> bool {
    def.custom().is_some()
        && c.storage == crate::catalog::crds().storage
        && crate::object_meta::meta_str(&c.object, "name") == def.storage
}
