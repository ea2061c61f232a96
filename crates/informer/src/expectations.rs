//! Writes of a controller's own that its cache has not shown yet — client-go's controller
//! "expectations". Until the watch delivers a create, the cache still says "missing", and until it
//! delivers a delete, it still shows the object: a reconcile in that window must wait rather than
//! create again (and misread its own object's AlreadyExists as someone else's) or delete again (a
//! 404 for nothing). An expectation lapses after [`EXPECTATION_TIMEOUT`], so a lost event cannot
//! hold a key forever.
//!
//! ```
//! use kube_informer::{Expect, Expectations, ObjectKey};
//! let expected = Expectations::default();
//! let key = ObjectKey::new("default", "web");
//! expected.expect(&key, Expect::Created);
//! assert!(expected.pending(&key, Expect::Created)); // the next reconcile waits
//! expected.seen(&key); // the informer delivered it
//! assert!(!expected.pending(&key, Expect::Created));
//! ```

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::ObjectKey;

/// How long a write waits to be seen by the informer before it may be tried again (client-go's
/// `ExpectationsTimeout`).
pub const EXPECTATION_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// What a key waits for the cache to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// The object this controller created.
    Created,
    /// The object this controller deleted gone.
    Deleted,
}

/// The writes each key waits for the cache to show. Cheap to clone; clones share.
#[derive(Clone, Default)]
pub struct Expectations(Arc<Mutex<HashMap<ObjectKey, (Expect, Instant)>>>);

impl Expectations {
    /// `key` waits for the cache to show `what`.
    pub fn expect(&self, key: &ObjectKey, what: Expect) {
        self.0.lock().insert(key.clone(), (what, Instant::now()));
    }

    /// The cache shows the object: a create is settled (a delete is not, until it is gone).
    pub fn seen(&self, key: &ObjectKey) {
        let mut m = self.0.lock();
        if m.get(key).is_some_and(|(e, _)| *e == Expect::Created) {
            m.remove(key);
        }
    }

    /// The cache shows the object gone.
    pub fn gone(&self, key: &ObjectKey) {
        self.0.lock().remove(key);
    }

    /// Whether `key` still waits for `what` (and has not waited longer than the timeout).
    #[must_use]
    pub fn pending(&self, key: &ObjectKey, what: Expect) -> bool {
        self.0.lock().get(key).is_some_and(|(e, at)| *e == what && at.elapsed() < EXPECTATION_TIMEOUT)
    }
}
