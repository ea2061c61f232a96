//! Following the Deployments in the sandbox's store through its change feed — no API requests and
//! no copies of the whole store while a phase is being timed, and little CPU: the bench process
//! also serves the sandbox, so a harness that burnt a core would slow the run it measures.
//!
//! The feed is drained on a thread of its own. Drained only while a phase was being awaited, it
//! fell behind whenever the bench was busy sending the user's changes, and the catch-ups from the
//! store cost 2.2 s of CPU in one run.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use kube_sandbox::Sandbox;
use kube_sandbox::builtin_resource;
use kube_sandbox::{Change, ChangeType};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::TryRecvError;

/// Name → `spec.replicas` of every Deployment in the store, with how many Deployments have each
/// replica count (so "all at 5" is one lookup).
#[derive(Default)]
pub struct View {
    replicas: HashMap<String, i64>,
    at: HashMap<i64, usize>,
    /// Bumped on every change applied, so a waiter re-checks only when something moved.
    version: u64,
    /// When the last change was applied: a condition that became true became true then.
    changed_at: Option<Instant>,
}

impl View {
    /// `spec.replicas` of Deployment `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.replicas.get(name).copied()
    }

    /// How many Deployments exist.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    fn set(&mut self, name: &str, replicas: Option<i64>) {
        let old = match (replicas, self.replicas.get_mut(name)) {
            // A status write: nothing a condition reads moved.
            (Some(r), Some(slot)) if *slot == r => return,
            (Some(r), Some(slot)) => Some(std::mem::replace(slot, r)),
            (Some(r), None) => self.replicas.insert(name.to_owned(), r),
            (None, _) => self.replicas.remove(name),
        };
        if let Some(r) = replicas {
            *self.at.entry(r).or_default() += 1;
        }
        if let Some(o) = old {
            *self.at.entry(o).or_default() -= 1;
        }
        self.version += 1;
        self.changed_at = Some(Instant::now());
    }
}

/// A [`View`] kept current by a thread following the store's change feed.
pub struct Deployments {
    view: Arc<Mutex<View>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn replicas_of(d: &Value) -> i64 {
    d["spec"]["replicas"].as_i64().unwrap_or(1)
}

fn name_of(d: &Value) -> &str {
    d["metadata"]["name"].as_str().unwrap_or("")
}

/// Replaces the view with the store's Deployments; returns the store's version at that moment
/// (changes up to it are in the view).
fn reread(sb: &Sandbox, view: &Mutex<View>) -> u64 {
    let deploys = builtin_resource("apps", "v1", "deployments").unwrap();
    // Shared objects, no copies.
    // Every namespace: the scale run spreads its Deployments over many (names stay unique).
    let (rv, items) = sb.store().snapshot(deploys, None);
    let mut v = view.lock();
    let live: std::collections::HashSet<&str> = items.iter().map(|d| name_of(d)).collect();
    let gone: Vec<String> = v.replicas.keys().filter(|k| !live.contains(k.as_str())).cloned().collect();
    for name in gone {
        v.set(&name, None);
    }
    for d in &items {
        v.set(name_of(d), Some(replicas_of(d)));
    }
    rv
}

fn follow_feed(sb: &Sandbox, mut feed: Receiver<Arc<Change>>, view: &Mutex<View>, stop: &AtomicBool) {
    let mut floor = reread(sb, view);
    // Woken every millisecond to take what has queued, rather than once per change: a wake-up per
    // change (tens of thousands a second) cost the sandbox more than the changes themselves.
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(1));
        let mut v = view.lock();
        loop {
            match feed.try_recv() {
                Ok(c) if c.storage == "deployments.apps" && c.rv > floor => {
                    let replicas = (c.kind != ChangeType::Deleted).then(|| replicas_of(&c.object));
                    v.set(name_of(&c.object), replicas);
                }
                Ok(_) => {}
                Err(TryRecvError::Empty) => break,
                // The feed holds a bounded number of changes; catch up from the store.
                Err(TryRecvError::Lagged(_)) => {
                    drop(v);
                    floor = reread(sb, view);
                    v = view.lock();
                }
                Err(TryRecvError::Closed) => return,
            }
        }
    }
}

impl Deployments {
    /// Starts following; reads the store once.
    pub fn follow(sb: &Sandbox) -> Self {
        let feed = sb.store().subscribe();
        let view = Arc::new(Mutex::new(View::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (sb, view, stop) = (sb.clone(), Arc::clone(&view), Arc::clone(&stop));
            std::thread::spawn(move || follow_feed(&sb, feed, &view, &stop))
        };
        Self { view, stop, thread: Some(thread) }
    }

    /// Waits until `done(view)`; returns when the change that made it true was applied. Panics
    /// after `limit`.
    pub async fn until(&mut self, limit: Duration, done: impl Fn(&View) -> bool) -> Instant {
        let deadline = Instant::now() + limit;
        let mut checked = None;
        loop {
            {
                let v = self.view.lock();
                if checked != Some(v.version) {
                    if done(&v) {
                        return v.changed_at.unwrap_or_else(Instant::now);
                    }
                    checked = Some(v.version);
                }
                assert!(
                    Instant::now() < deadline,
                    "not converged within {limit:?} ({} Deployments)",
                    v.len()
                );
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// `n` Deployments, all with `replicas`.
    pub fn all(n: usize, replicas: i64) -> impl Fn(&View) -> bool {
        move |d| d.replicas.len() == n && d.at.get(&replicas).copied().unwrap_or(0) == n
    }
}

impl Drop for Deployments {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
