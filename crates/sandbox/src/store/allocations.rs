//! Who holds which cluster IP and node port: the index upstream's service allocators keep as
//! bitmaps beside the Services, here kept by the store as it commits Services. The decisions
//! (what a Service holds, what a write is given or refused) are
//! [`crate::kinds::service_allocation`]'s; this module answers them under the store's lock.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};

use serde_json::Value;

use crate::kinds::service_allocation::{self, Held, IP_RANGE, PORT_RANGE, Pool};
use crate::status::ApiError;

/// Where Services are stored.
pub(super) const SERVICE_STORAGE: &str = "services.";

/// A Service: its namespace and name.
type Owner = (String, String);

/// What each Service holds, and where the next dynamic draw of each range starts.
#[derive(Debug, Default)]
pub(super) struct Allocations {
    held: HashMap<Held, Owner>,
    /// Draws so far, each range's (an atomic so that a write draws under a shared borrow of the
    /// locked state).
    ips_drawn: AtomicU32,
    ports_drawn: AtomicU32,
}

impl Clone for Allocations {
    fn clone(&self) -> Self {
        Self {
            held: self.held.clone(),
            ips_drawn: AtomicU32::new(self.ips_drawn.load(Ordering::Relaxed)),
            ports_drawn: AtomicU32::new(self.ports_drawn.load(Ordering::Relaxed)),
        }
    }
}

impl Allocations {
    /// Records what a committed Service (in `ns`) holds.
    pub(super) fn add(&mut self, ns: &str, svc: &Value) {
        let owner = owner(ns, svc);
        for what in service_allocation::held(svc) {
            self.held.insert(what, owner.clone());
        }
    }

    /// Releases what a Service held (only what the index has as its).
    pub(super) fn remove(&mut self, ns: &str, svc: &Value) {
        let owner = owner(ns, svc);
        for what in service_allocation::held(svc) {
            if self.held.get(&what) == Some(&owner) {
                self.held.remove(&what);
            }
        }
    }

    /// Gives a Service being written in `ns` (created when `old` is `None`) what it needs of
    /// the ranges and refuses what it names that another holds. What it is given is held once it
    /// is committed.
    pub(super) fn allocate(&self, ns: &str, svc: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
        let owner = owner(ns, svc);
        let mut draw = Draw { all: self, owner: &owner, given: HashSet::new() };
        service_allocation::allocate(svc, old, &mut draw)
    }
}

fn owner(ns: &str, svc: &Value) -> Owner {
    let name = svc.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    (ns.to_owned(), name.to_owned())
}

/// One write's view of the ranges: what others hold, what it was given.
struct Draw<'a> {
    all: &'a Allocations,
    owner: &'a Owner,
    given: HashSet<Held>,
}

impl Draw<'_> {
    fn free(&self, what: &Held) -> bool {
        !self.taken(what)
    }
}

impl Pool for Draw<'_> {
    fn taken(&self, what: &Held) -> bool {
        self.given.contains(what) || self.all.held.get(what).is_some_and(|k| k != self.owner)
    }

    fn give(&mut self, what: Held) {
        self.given.insert(what);
    }

    fn next_ip(&mut self) -> Option<String> {
        // The dynamic band first, then the static one; the network's and broadcast addresses are
        // never given.
        let (size, band) = IP_RANGE;
        let usable = size - 2;
        (0..usable).find_map(|_| {
            let n = self.all.ips_drawn.fetch_add(1, Ordering::Relaxed) % usable;
            let offset = (band - 1 + n) % usable + 1;
            let ip = service_allocation::service_ip(offset);
            self.free(&Held::Ip(ip.clone())).then_some(ip)
        })
    }

    fn next_port(&mut self) -> Option<i64> {
        let (first, size, band) = PORT_RANGE;
        (0..size).find_map(|_| {
            let n = self.all.ports_drawn.fetch_add(1, Ordering::Relaxed) % size;
            let port = first + i64::from((band + n) % size);
            self.free(&Held::Port(port)).then_some(port)
        })
    }
}
