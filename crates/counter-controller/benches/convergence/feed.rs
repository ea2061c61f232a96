//! Following the Deployments in the sandbox's store through its change feed — no API requests and
//! no copies of the whole store while a phase is being timed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sandbox::Sandbox;
use sandbox::resource::find;
use sandbox::store::{Change, ChangeType};
use serde_json::Value;
use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::RecvError;

/// Name → `spec.replicas` of every Deployment in the store, kept current from the feed.
pub struct Deployments {
    feed: Receiver<Arc<Change>>,
    replicas: HashMap<String, i64>,
}

fn replicas_of(d: &Value) -> i64 {
    d["spec"]["replicas"].as_i64().unwrap_or(1)
}

impl Deployments {
    /// Starts following; reads the store once.
    pub fn follow(sb: &Sandbox) -> Self {
        let feed = sb.store().subscribe();
        let mut me = Self { feed, replicas: HashMap::new() };
        me.reread(sb);
        me
    }

    fn reread(&mut self, sb: &Sandbox) {
        let deploys = find("apps", "v1", "deployments").unwrap();
        let list = sb.store().list(deploys, Some("default"), &Default::default()).unwrap();
        self.replicas = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["metadata"]["name"].as_str().unwrap_or("").to_owned(), replicas_of(d)))
            .collect();
    }

    /// Waits until `done(&name → replicas)`; returns when it became true. Panics after `limit`.
    pub async fn until(
        &mut self,
        sb: &Sandbox,
        limit: Duration,
        done: impl Fn(&HashMap<String, i64>) -> bool,
    ) -> Instant {
        let deadline = Instant::now() + limit;
        while !done(&self.replicas) {
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(!left.is_zero(), "not converged within {limit:?} ({} Deployments)", self.replicas.len());
            match tokio::time::timeout(left, self.feed.recv()).await {
                Ok(Ok(c)) if c.storage == "deployments.apps" => {
                    let name = c.object["metadata"]["name"].as_str().unwrap_or("").to_owned();
                    if c.kind == ChangeType::Deleted {
                        self.replicas.remove(&name);
                    } else {
                        self.replicas.insert(name, replicas_of(&c.object));
                    }
                }
                Ok(Ok(_)) | Err(_) => {}
                // The feed holds a bounded number of changes; catch up from the store.
                Ok(Err(RecvError::Lagged(_))) => self.reread(sb),
                Ok(Err(RecvError::Closed)) => panic!("the store's feed closed"),
            }
        }
        Instant::now()
    }

    /// `n` Deployments, all with `replicas`.
    pub fn all(n: usize, replicas: i64) -> impl Fn(&HashMap<String, i64>) -> bool {
        move |m| m.len() == n && m.values().all(|r| *r == replicas)
    }
}
