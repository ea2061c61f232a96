//! Following the Deployments in the sandbox's store through its change feed — no API requests and
//! no copies of the whole store while a phase is being timed, and little CPU: the bench process
//! also serves the sandbox, so a harness that burnt a core would slow the run it measures.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::Sandbox;
use sandbox::resource::find;
use sandbox::store::{Change, ChangeType};
use serde_json::Value;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

/// Name → `spec.replicas` of every Deployment in the store, kept current from the feed, with how
/// many Deployments have each replica count (so "all at 5" is one lookup).
pub struct Deployments {
    feed: Receiver<Arc<Change>>,
    replicas: HashMap<String, i64>,
    at: HashMap<i64, usize>,
    /// The store's resourceVersion at the last reread: changes up to it are in the maps already.
    floor: u64,
}

fn replicas_of(d: &Value) -> i64 {
    d["spec"]["replicas"].as_i64().unwrap_or(1)
}

impl Deployments {
    /// Starts following; reads the store once.
    pub fn follow(sb: &Sandbox) -> Self {
        let feed = sb.store().subscribe();
        let mut me = Self { feed, replicas: HashMap::new(), at: HashMap::new(), floor: 0 };
        me.reread(sb);
        me
    }

    fn reread(&mut self, sb: &Sandbox) {
        let deploys = find("apps", "v1", "deployments").unwrap();
        // Shared objects, no copies: a slow reread would fall behind the feed again.
        let (rv, items) = sb.store().snapshot(deploys, Some("default"));
        self.floor = rv;
        self.replicas.clear();
        self.at.clear();
        for d in items {
            self.set(d["metadata"]["name"].as_str().unwrap_or("").to_owned(), Some(replicas_of(&d)));
        }
    }

    fn set(&mut self, name: String, replicas: Option<i64>) {
        let old = match replicas {
            Some(r) => {
                *self.at.entry(r).or_default() += 1;
                self.replicas.insert(name, r)
            }
            None => self.replicas.remove(&name),
        };
        if let Some(o) = old {
            *self.at.entry(o).or_default() -= 1;
        }
    }

    fn apply(&mut self, sb: &Sandbox, event: Result<Arc<Change>, RecvError>) {
        match event {
            Ok(c) if c.storage == "deployments.apps" && c.rv > self.floor => {
                let name = c.object["metadata"]["name"].as_str().unwrap_or("").to_owned();
                let replicas = (c.kind != ChangeType::Deleted).then(|| replicas_of(&c.object));
                self.set(name, replicas);
            }
            Ok(_) => {}
            // The feed holds a bounded number of changes; catch up from the store.
            Err(RecvError::Lagged(_)) => self.reread(sb),
            Err(RecvError::Closed) => panic!("the store's feed closed"),
        }
    }

    /// `spec.replicas` of Deployment `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<i64> {
        self.replicas.get(name).copied()
    }

    /// How many Deployments exist.
    pub fn len(&self) -> usize {
        self.replicas.len()
    }

    /// Waits until `done(self)`; returns when it became true. Panics after `limit`.
    pub async fn until(&mut self, sb: &Sandbox, limit: Duration, done: impl Fn(&Self) -> bool) -> Instant {
        let deadline = Instant::now() + limit;
        while !done(self) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "not converged within {limit:?} ({} Deployments)", self.replicas.len());
            if let Ok(event) = tokio::time::timeout(left, self.feed.recv()).await {
                self.apply(sb, event);
            }
            // Take what else is queued before checking again.
            loop {
                match self.feed.try_recv() {
                    Ok(c) => self.apply(sb, Ok(c)),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Lagged(n)) => self.apply(sb, Err(RecvError::Lagged(n))),
                    Err(TryRecvError::Closed) => self.apply(sb, Err(RecvError::Closed)),
                }
            }
        }
        Instant::now()
    }

    /// `n` Deployments, all with `replicas`.
    pub fn all(n: usize, replicas: i64) -> impl Fn(&Self) -> bool {
        move |d| d.replicas.len() == n && d.at.get(&replicas).copied().unwrap_or(0) == n
    }
}
