//! What admission keeps of its configuration objects between writes: the policies with their
//! bindings, the webhooks. Upstream's plugins keep them from their informers; here each is made
//! from the store again only after one of its resources is written (keyed on the store's
//! identity and its last write to each), so a write pays for no parsing or compiling.

use std::sync::Arc;

use parking_lot::Mutex;

use super::Objects;
use crate::resource::ResourceDef;

/// One kind of configuration, as made from the store's objects, per store.
pub(super) struct InForce<T> {
    made: Mutex<Vec<Made<T>>>,
}

/// What was made for one store: its identity, its last writes to the resources then, and what.
type Made<T> = (u64, [u64; 2], Arc<T>);

impl<T> InForce<T> {
    pub(super) const fn new() -> Self {
        Self { made: Mutex::new(Vec::new()) }
    }

    /// What `make` makes of the store `objects` reads, whose configuration is the objects of
    /// `defs`: made again only when one of them was written since.
    pub(super) fn get(
        &self,
        objects: &dyn Objects,
        defs: [&ResourceDef; 2],
        make: impl FnOnce() -> T,
    ) -> Arc<T> {
        let (store, first) = objects.written(defs[0]);
        let at = [first, objects.written(defs[1]).1];
        if let Some((_, _, made)) = self.made.lock().iter().find(|(s, w, _)| *s == store && *w == at) {
            return Arc::clone(made);
        }
        let made = Arc::new(make());
        let mut all = self.made.lock();
        all.retain(|(s, _, _)| *s != store);
        // A process holds few stores at once; those gone leave an entry each (a dry run's copy too).
        if all.len() >= 64 {
            all.clear();
        }
        all.push((store, at, Arc::clone(&made)));
        made
    }
}
