//! The informer: runs `kube::runtime::watcher` (list, then watch, relisting on 410, with the
//! watcher's default backoff), keeps the cache, and tells handlers what changed.
//!
//! What it adds on top of kube-runtime's reflector, as client-go's shared informer does:
//!
//! * handlers with the old *and* new object (`on_update(old, new)`);
//! * tombstones: after a relist, objects the cache had and the list no longer has are reported as
//!   [`Deleted::FinalStateUnknown`] — the deletes that happened while the watch was broken;
//! * resync: every period, `on_update(x, x)` for every cached object, without asking the server;
//! * late handlers receive the current cache as adds, so every handler starts from a full view;
//! * a transform (client-go's `SetTransform`) applied to every object before it is cached, to
//!   drop what the controller never reads (`managedFields`, big data) — the cache's memory;
//! * a filter, for a replica that owns only some keys (sharding): objects it rejects are not
//!   cached, and [`relist`](Informer::relist) re-reads everything when the filter changes;
//! * a keep predicate ([`set_keep`](Informer::set_keep)): objects it rejects are not cached
//!   but remembered as present, by a hash of their key ([`presence`](crate::presence)), so a
//!   controller that acts on few objects of a kind pays for those only, and can still tell "not
//!   mine" from "gone" ([`Lister::presence`]);
//! * streaming lists where the server serves them, paginated lists where it does not
//!   ([`Config::prefer_streaming_lists`], [`streaming`](crate::streaming));
//! * [`has_synced`](Informer::has_synced) / [`wait_for_cache_sync`](Informer::wait_for_cache_sync);
//! * how new the cache is ([`seen_version`](Informer::seen_version)), so a controller can tell
//!   whether it has caught up with an event another informer delivered, and a consistent read
//!   ([`read_live`](Informer::read_live)) for when it cannot tell.

use std::collections::{HashMap, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::StreamExt;
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Resource};
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;

use crate::cache::{CacheState, Lister};
use crate::handler::{Deleted, EventHandler};
use crate::key::ObjectKey;
use crate::presence::PresentKeys;

/// What an informer watches and how often it resyncs.
#[derive(Debug, Clone)]
pub struct Config {
    /// How often every cached object is replayed to handlers as an update. Zero disables resync.
    pub resync: Duration,
    /// List/watch settings: label and field selectors, page size, streaming lists.
    pub watcher: watcher::Config,
    /// List by streaming where the API server serves it, by pages where it does not, deciding by
    /// asking it once ([`streaming`](crate::streaming)). When `false`, `watcher` decides.
    pub prefer_streaming_lists: bool,
}

impl Default for Config {
    /// client-go's usual 30 s resync, everything selected, paginated lists.
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(30),
            watcher: watcher::Config::default(),
            prefer_streaming_lists: false,
        }
    }
}

impl Config {
    /// Only objects whose labels match `selector` (e.g. `managed-by=counter-controller`).
    #[must_use]
    pub fn labels(mut self, selector: &str) -> Self {
        self.watcher = self.watcher.labels(selector);
        self
    }

    /// Sets the resync period; zero disables it.
    #[must_use]
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = period;
        self
    }

    /// Lists by streaming (`sendInitialEvents`) where the API server serves it: the objects
    /// arrive one watch event at a time instead of pages of 500, with no list response to hold.
    /// Where the server does not (older than 1.27, or the feature turned off), paginated lists;
    /// the informer asks once, before its first list ([`streaming`](crate::streaming)).
    #[must_use]
    pub fn prefer_streaming_lists(mut self) -> Self {
        self.prefer_streaming_lists = true;
        self
    }
}

/// What a resource type needs to be informed on.
pub trait Watchable:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static
{
}
impl<K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Debug + Send + Sync + 'static> Watchable
    for K
{
}

/// A function applied to every object before it is cached or handed to handlers.
pub type Transform<K> = Arc<dyn Fn(K) -> K + Send + Sync>;

/// Which objects the cache keeps.
pub type Filter<K> = Arc<dyn Fn(&K) -> bool + Send + Sync>;

struct Inner<K> {
    api: Api<K>,
    config: Config,
    transform: RwLock<Option<Transform<K>>>,
    filter: RwLock<Option<Filter<K>>>,
    keep: RwLock<Option<Filter<K>>>,
    /// Whether the server serves streaming lists, once known.
    streaming: Mutex<Option<bool>>,
    /// Asks the watch loop to list again from scratch.
    relist: Notify,
    /// Relists asked for so far.
    relists_asked: std::sync::atomic::AtomicU64,
    /// The last asked-for relist whose list has been applied to the cache.
    relisted: tokio::sync::watch::Sender<u64>,
    cache: Arc<RwLock<CacheState<K>>>,
    /// Also the dispatch lock: cache changes and their notifications happen under it, so a
    /// handler added meanwhile sees each change exactly once (in its replay or live).
    handlers: Mutex<Vec<Arc<dyn EventHandler<K>>>>,
    synced: AtomicBool,
    synced_notify: Notify,
    /// The newest numeric `resourceVersion` the cache has applied; 0 before any.
    seen: AtomicU64,
}

/// A shared informer for one resource type in one namespace (or all).
///
/// ```no_run
/// use std::sync::Arc;
/// use kube_informer::{Config, EnqueueKey, Informer};
/// use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn f(client: kube::Client) {
/// let informer = Informer::new(kube::Api::<ConfigMap>::namespaced(client, "default"), Config::default());
/// informer.add_handler(Arc::new(EnqueueKey::new(|key| println!("{key}"))));
/// let lister = informer.lister();
/// tokio::spawn({ let i = informer.clone(); async move { i.run(std::future::pending::<()>()).await } });
/// assert!(informer.wait_for_cache_sync(tokio::time::sleep(std::time::Duration::from_secs(30))).await);
/// println!("{} configmaps", lister.len());
/// # }
/// ```
pub struct Informer<K> {
    inner: Arc<Inner<K>>,
}

impl<K> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<K: Watchable> Informer<K> {
    /// An informer over `api` (namespaced or all namespaces) with `config`. Does nothing until
    /// [`run`](Self::run).
    #[must_use]
    pub fn new(api: Api<K>, config: Config) -> Self {
        Self {
            inner: Arc::new(Inner {
                api,
                config,
                transform: RwLock::new(None),
                filter: RwLock::new(None),
                keep: RwLock::new(None),
                streaming: Mutex::new(None),
                relist: Notify::new(),
                relists_asked: std::sync::atomic::AtomicU64::new(0),
                relisted: tokio::sync::watch::channel(0).0,
                cache: Arc::default(),
                handlers: Mutex::new(Vec::new()),
                synced: AtomicBool::new(false),
                synced_notify: Notify::new(),
                seen: AtomicU64::new(0),
            }),
        }
    }

    /// Read access to the cache.
    #[must_use]
    pub fn lister(&self) -> Lister<K> {
        Lister { state: Arc::clone(&self.inner.cache) }
    }

    /// Registers a handler. Registered after the first list, it first receives every cached
    /// object as `on_add(obj, true)`.
    ///
    /// ## Warning
    ///
    /// Handlers run under the informer's dispatch lock: a handler must not call `add_handler`.
    pub fn add_handler(&self, handler: Arc<dyn EventHandler<K>>) {
        self.register(handler, false);
    }

    /// As [`add_handler`](Self::add_handler), but the handler runs before those added so far:
    /// for bookkeeping that what the others start depends on (a note a reconcile reads must be
    /// written before the key is enqueued).
    pub fn add_handler_first(&self, handler: Arc<dyn EventHandler<K>>) {
        self.register(handler, true);
    }

    fn register(&self, handler: Arc<dyn EventHandler<K>>, first: bool) {
        let mut handlers = self.inner.handlers.lock();
        for obj in self.inner.cache.read().objects.values() {
            handler.on_add(obj, true);
        }
        if first {
            handlers.insert(0, handler);
        } else {
            handlers.push(handler);
        }
    }

    /// Sets the transform applied to every object before it is cached and handed to handlers
    /// (client-go's `SetTransform`): typically, dropping fields the controller never reads, so the
    /// cache holds less.
    ///
    /// ## Warning
    /// Set it before [`run`](Self::run); objects already cached are not transformed again. What
    /// the transform drops is gone for every reader of this informer, and a transform that
    /// changes the object's namespace or name changes its key.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// # fn f(informer: kube_informer::Informer<ConfigMap>) {
    /// informer.set_transform(Arc::new(|mut cm: ConfigMap| {
    ///     cm.metadata.managed_fields = None;
    ///     cm
    /// }));
    /// # }
    /// ```
    pub fn set_transform(&self, transform: Transform<K>) {
        *self.inner.transform.write() = Some(transform);
    }

    /// Sets which objects are cached (and handed to handlers); the others are treated as absent.
    /// Call [`relist`](Self::relist) after changing it so objects it now accepts are read.
    ///
    /// ## Warning
    /// A cached object the filter comes to reject is reported deleted (a tombstone) at the next
    /// relist: a controller must not act on keys its filter rejects.
    pub fn set_filter(&self, filter: Filter<K>) {
        *self.inner.filter.write() = Some(filter);
    }

    fn accepted(&self, obj: &K) -> bool {
        self.inner.filter.read().as_ref().is_none_or(|f| f(obj))
    }

    /// Caches only the objects `keep` accepts; of the others (which the filter accepts) it keeps
    /// only the fact that they exist, as a 64-bit hash of their key — about 12 bytes each instead
    /// of the whole object ([`presence`](crate::presence) for the collision odds). Readers tell
    /// "exists, uncached" from "absent" with [`Lister::presence`].
    ///
    /// Handlers hear of uncached objects only when it matters to a reader of the cache:
    /// * an object `keep` starts accepting is an `on_add` (live) — or, at a relist, initial;
    /// * a cached object it stops accepting leaves the cache and is an `on_update(old, new)`,
    ///   `new` not being cached — never an `on_delete`: the object still exists;
    /// * an uncached object the watch sees deleted is an `on_delete` ([`Deleted::Known`]);
    /// * uncached objects a relist finds gone cannot be named (only hashes were kept): handlers
    ///   get their number, [`EventHandler::on_uncached_deleted`].
    ///
    /// Changes to an uncached object that leave it uncached, and its appearance, are not
    /// reported: nothing of it is cached for a reader to see change.
    ///
    /// ## Warning
    /// Set it before [`run`](Self::run). `keep` sees objects after the transform. The shard
    /// filter ([`set_filter`](Self::set_filter)) comes first: what it rejects is absent, not
    /// uncached; [`refilter`](Self::refilter) drops cached objects only (uncached keys of a
    /// share given away stay remembered until the next relist).
    pub fn set_keep(&self, keep: Filter<K>) {
        *self.inner.keep.write() = Some(keep);
    }

    fn kept(&self, obj: &K) -> bool {
        self.inner.keep.read().as_ref().is_none_or(|f| f(obj))
    }

    /// Lists again from scratch and waits until a list started after this call has been applied
    /// to the cache.
    pub async fn relist(&self) {
        let mut done = self.inner.relisted.subscribe();
        let ticket = self.inner.relists_asked.fetch_add(1, Ordering::AcqRel) + 1;
        self.inner.relist.notify_one();
        let _ = done.wait_for(|n| *n >= ticket).await;
    }

    /// Drops the cached objects the filter now rejects, each reported deleted (a tombstone) as a
    /// relist would, without asking the server: enough when the filter only narrowed.
    pub fn refilter(&self) {
        let handlers = self.inner.handlers.lock();
        let gone: Vec<Deleted<K>> = {
            let mut cache = self.inner.cache.write();
            let rejected: Vec<ObjectKey> =
                cache.objects.iter().filter(|(_, o)| !self.accepted(o)).map(|(k, _)| k.clone()).collect();
            rejected
                .into_iter()
                .filter_map(|key| cache.remove(&key).map(|last| Deleted::FinalStateUnknown { key, last }))
                .collect()
        };
        for d in &gone {
            for h in handlers.iter() {
                h.on_delete(d);
            }
        }
    }

    fn transformed(&self, obj: K) -> K {
        match self.inner.transform.read().as_ref() {
            Some(t) => t(obj),
            None => obj,
        }
    }

    /// Whether the first full list has reached the cache.
    #[must_use]
    pub fn has_synced(&self) -> bool {
        self.inner.synced.load(Ordering::Acquire)
    }

    /// Waits until the cache has synced; returns `false` if `cancel` resolves first.
    pub async fn wait_for_cache_sync(&self, cancel: impl Future) -> bool {
        tokio::pin!(cancel);
        loop {
            let notified = self.inner.synced_notify.notified();
            if self.has_synced() {
                return true;
            }
            tokio::select! {
                () = notified => {}
                _ = &mut cancel => return self.has_synced(),
            }
        }
    }

    /// Lists, watches and dispatches until `shutdown` resolves.
    ///
    /// Watch errors (an unreachable server, a 403, a dropped connection) are logged and retried
    /// with the watcher's backoff (0.8 s doubling to 30 s), so this never spins.
    pub async fn run(&self, shutdown: impl Future) {
        tokio::pin!(shutdown);
        let mut stream = tokio::select! {
            _ = &mut shutdown => return,
            s = self.start() => s,
        };
        let resync = self.inner.config.resync;
        let mut ticks =
            tokio::time::interval(if resync.is_zero() { Duration::from_secs(3600) } else { resync });
        ticks.tick().await;
        let mut relist: Option<Listing<K>> = None;
        // The relist requests the current list (stream) answers.
        let mut answering = self.inner.relists_asked.load(Ordering::Acquire);
        loop {
            tokio::select! {
                _ = &mut shutdown => return,
                () = self.inner.relist.notified() => {
                    answering = self.inner.relists_asked.load(Ordering::Acquire);
                    // Starting may ask the server whether it streams lists: not past a shutdown.
                    stream = tokio::select! {
                        _ = &mut shutdown => return,
                        s = self.start() => s,
                    };
                    relist = None;
                }
                event = stream.next() => match event {
                    None => return,
                    Some(Err(e)) => tracing::warn!(resource = K::plural(&()).as_ref(), error = %e, "watch failed; retrying with backoff"),
                    Some(Ok(watcher::Event::Init)) => relist = Some(self.listing()),
                    Some(Ok(watcher::Event::InitApply(obj))) => {
                        let version = numeric_version(&obj);
                        let obj = self.transformed(obj);
                        let listing = relist.get_or_insert_with(|| self.listing());
                        listing.newest = listing.newest.max(version);
                        if self.accepted(&obj) {
                            // Rejected objects are dropped here, one at a time, as the pages or
                            // the stream deliver them: only their key's hash stays.
                            if self.kept(&obj) { listing.kept.push(obj) } else { self.note_uncached(listing, obj) }
                        }
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        let listing = relist.take().unwrap_or_else(|| self.listing());
                        let newest = listing.newest;
                        self.replace(listing);
                        self.inner.seen.fetch_max(newest, Ordering::AcqRel);
                        self.inner.relisted.send_modify(|n| *n = (*n).max(answering));
                    }
                    Some(Ok(watcher::Event::Apply(obj))) => {
                        let version = numeric_version(&obj);
                        let obj = self.transformed(obj);
                        if !self.accepted(&obj) {
                            self.delete(obj);
                        } else if self.kept(&obj) {
                            self.apply(obj);
                        } else {
                            self.remember(obj);
                        }
                        self.inner.seen.fetch_max(version, Ordering::AcqRel);
                    }
                    Some(Ok(watcher::Event::Delete(obj))) => {
                        let version = numeric_version(&obj);
                        self.delete(self.transformed(obj));
                        self.inner.seen.fetch_max(version, Ordering::AcqRel);
                    }
                },
                _ = ticks.tick(), if !resync.is_zero() && self.has_synced() => self.resync(),
            }
        }
    }

    /// The watch stream: streaming or paginated lists as the config and the server say.
    async fn start(
        &self,
    ) -> std::pin::Pin<Box<impl futures::Stream<Item = watcher::Result<watcher::Event<K>>> + use<K>>> {
        let mut config = self.inner.config.watcher.clone();
        if self.inner.config.prefer_streaming_lists {
            let known = *self.inner.streaming.lock();
            let serves = match known {
                Some(serves) => serves,
                None => {
                    let answer = crate::streaming::serves_streaming_lists(&self.inner.api).await;
                    tracing::info!(
                        resource = K::plural(&()).as_ref(),
                        streaming = ?answer,
                        "asked the API server whether it serves streaming lists"
                    );
                    *self.inner.streaming.lock() = answer;
                    answer.unwrap_or(false)
                }
            };
            config.initial_list_strategy = if serves {
                watcher::InitialListStrategy::StreamingList
            } else {
                watcher::InitialListStrategy::ListWatch
            };
        }
        Box::pin(watcher(self.inner.api.clone(), config).default_backoff())
    }

    /// Whether the lists are streamed (`Some(true)`), paginated (`Some(false)`), or not decided
    /// yet (`None`: before the first list, or the server's answer said nothing). Only with
    /// [`Config::prefer_streaming_lists`]; otherwise `None`.
    #[must_use]
    pub fn streams_lists(&self) -> Option<bool> {
        *self.inner.streaming.lock()
    }

    /// The newest `resourceVersion` the cache has applied — of an object listed, changed or
    /// deleted, kept or not — as a number; `None` before any, or where the server's versions are
    /// not numbers. Every change of this resource up to that version is in the cache: a watch
    /// delivers a resource's changes in order. Set after the change is applied, so a reader that
    /// reads this first and the cache second sees a cache at least this new.
    ///
    /// ## Warning
    /// Versions name a point in the API server's storage, shared by the kinds stored together (in
    /// a cluster, every built-in kind but Events, unless the server splits its storage); compare
    /// this with another kind's version (as numbers: [`version::numeric`](crate::version::numeric))
    /// only for kinds stored together. The watcher consumes bookmarks without passing them on, so
    /// a quiet resource's cache stays at its last change's version however current it is.
    #[must_use]
    pub fn seen_version(&self) -> Option<u64> {
        Some(self.inner.seen.load(Ordering::Acquire)).filter(|v| *v > 0)
    }

    /// Reads `key` from the API server, not the cache: a consistent read, answered from the
    /// storage's current state (`None` when it does not exist). For the rare decision that must
    /// not rest on a cache that may be behind ([`seen_version`](Self::seen_version)); the object
    /// is transformed as cached objects are.
    ///
    /// # Errors
    ///
    /// The request failed (any answer but the object or 404).
    pub async fn read_live(&self, key: &ObjectKey) -> Result<Option<K>, kube::Error> {
        let ns = Some(key.namespace()).filter(|ns| !ns.is_empty());
        let request = kube::core::Request::new(K::url_path(&(), ns))
            .get(key.name(), &kube::api::GetParams::default())
            .map_err(kube::Error::BuildRequest)?;
        match self.inner.api.clone().into_client().request::<K>(request).await {
            Ok(obj) => Ok(Some(self.transformed(obj))),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// An empty listing, hashing keys as the cache does.
    fn listing(&self) -> Listing<K> {
        Listing {
            kept: Vec::new(),
            present: self.inner.cache.read().present.empty_like(),
            demoted: Vec::new(),
            newest: 0,
        }
    }

    /// A listed object the keep predicate rejects: its key's hash, and the object itself only when
    /// it is cached now (it stopped being kept: an update at the end of the list).
    fn note_uncached(&self, listing: &mut Listing<K>, obj: K) {
        let key = ObjectKey::of(&obj);
        listing.present.insert(&key);
        if self.inner.cache.read().objects.contains_key(&key) {
            listing.demoted.push(obj);
        }
    }

    /// A full list arrived: deletions first (as tombstones), then adds and updates in list order.
    fn replace(&self, listing: Listing<K>) {
        let Listing { kept: listed, present: uncached, demoted, .. } = listing;
        let handlers = self.inner.handlers.lock();
        let initial = !self.has_synced();
        let listed: Vec<(ObjectKey, Arc<K>)> =
            listed.into_iter().map(|o| (ObjectKey::of(&o), Arc::new(o))).collect();
        let present: HashSet<&ObjectKey> = listed.iter().map(|(k, _)| k).collect();
        let mut demoted: HashMap<ObjectKey, Arc<K>> =
            demoted.into_iter().map(|o| (ObjectKey::of(&o), Arc::new(o))).collect();
        let mut cache = self.inner.cache.write();
        let gone: Vec<ObjectKey> = cache.objects.keys().filter(|k| !present.contains(k)).cloned().collect();
        let mut notes = Vec::with_capacity(gone.len() + listed.len());
        for key in gone {
            if let Some(last) = cache.remove(&key) {
                // Listed but no longer kept: it exists, changed; otherwise it is gone.
                notes.push(match demoted.remove(&key) {
                    Some(new) => Note::Update(last, new),
                    None => Note::Delete(Deleted::FinalStateUnknown { key, last }),
                });
            }
        }
        // Uncached keys no longer listed at all (neither uncached nor now kept) are gone.
        let listed_hashes: HashSet<u64> = listed.iter().map(|(k, _)| uncached.hash(k)).collect();
        let before = std::mem::replace(&mut cache.present, uncached);
        let uncached_gone = before
            .hashes()
            .filter(|h| !cache.present.contains_hash(*h) && !listed_hashes.contains(h))
            .count();
        drop(before);
        for (key, obj) in listed {
            match cache.insert(key, Arc::clone(&obj)) {
                Some(old) => notes.push(Note::Update(old, obj)),
                None => notes.push(Note::Add(obj)),
            }
        }
        drop(cache);
        for note in &notes {
            for h in handlers.iter() {
                match note {
                    Note::Delete(d) => h.on_delete(d),
                    Note::Update(old, new) => h.on_update(old, new),
                    Note::Add(obj) => h.on_add(obj, initial),
                }
            }
        }
        if uncached_gone > 0 {
            for h in handlers.iter() {
                h.on_uncached_deleted(uncached_gone);
            }
        }
        drop(handlers);
        if initial {
            self.inner.synced.store(true, Ordering::Release);
            self.inner.synced_notify.notify_waiters();
        }
    }

    fn apply(&self, obj: K) {
        let handlers = self.inner.handlers.lock();
        let obj = Arc::new(obj);
        let key = ObjectKey::of(obj.as_ref());
        let old = {
            let mut cache = self.inner.cache.write();
            // Kept now: if it was uncached, it is an add.
            cache.present.remove(&key);
            cache.insert(key, Arc::clone(&obj))
        };
        for h in handlers.iter() {
            match &old {
                Some(old) => h.on_update(old, &obj),
                None => h.on_add(&obj, false),
            }
        }
    }

    /// An object the keep predicate rejects: remembered as present; if it was cached, it leaves
    /// the cache as an update (it still exists).
    fn remember(&self, obj: K) {
        let handlers = self.inner.handlers.lock();
        let key = ObjectKey::of(&obj);
        let old = {
            let mut cache = self.inner.cache.write();
            cache.present.insert(&key);
            cache.remove(&key)
        };
        if let Some(old) = old {
            let new = Arc::new(obj);
            for h in handlers.iter() {
                h.on_update(&old, &new);
            }
        }
    }

    fn delete(&self, obj: K) {
        let handlers = self.inner.handlers.lock();
        let key = ObjectKey::of(&obj);
        let (was, was_present) = {
            let mut cache = self.inner.cache.write();
            (cache.remove(&key), cache.present.remove(&key))
        };
        // With a filter, an object it rejected was never cached nor remembered: nothing to report.
        if was.is_none() && !was_present && self.inner.filter.read().is_some() {
            return;
        }
        let deleted = Deleted::Known(Arc::new(obj));
        for h in handlers.iter() {
            h.on_delete(&deleted);
        }
    }

    fn resync(&self) {
        let handlers = self.inner.handlers.lock();
        let objects: Vec<Arc<K>> = self.inner.cache.read().objects.values().cloned().collect();
        for obj in &objects {
            for h in handlers.iter() {
                h.on_update(obj, obj);
            }
        }
    }
}

/// What a list in progress has gathered: the kept objects, the uncached keys' hashes, and the
/// listed objects no longer kept that the cache still holds.
struct Listing<K> {
    kept: Vec<K>,
    present: PresentKeys,
    demoted: Vec<K>,
    /// The newest numeric `resourceVersion` listed.
    newest: u64,
}

/// `obj`'s `resourceVersion` as a number, 0 when it has none or it is not one.
fn numeric_version<K: Resource>(obj: &K) -> u64 {
    obj.meta().resource_version.as_deref().and_then(crate::version::numeric).unwrap_or(0)
}

enum Note<K> {
    Add(Arc<K>),
    Update(Arc<K>, Arc<K>),
    Delete(Deleted<K>),
}
