//! Acting only on a primary cache that has caught up with what enqueued the work.
//!
//! A controller's key is enqueued by events of its primary kind (a ConfigMap) and of the kinds it
//! owns (the Deployment). Each informer has a watch of its own, and nothing orders one watch's
//! events against another's: when a ConfigMap is deleted, the garbage collector deletes its
//! Deployment, and the Deployment's delete may reach the controller before the ConfigMap's. The
//! reconcile it triggers still finds the ConfigMap cached and decides Create — a Deployment, and
//! for a moment its pods, for an owner already gone. client-go controllers share the race.
//!
//! The coordinator closes it. For every event of a secondary kind it notes, under the work key,
//! the event's `resourceVersion` — unless the primary cache has already seen a version at least
//! as new ([`Informer::seen_version`](kube_informer::Informer::seen_version)). Before a reconcile
//! acts on a cached primary object as the reason to create, it asks
//! [`Coordinator::confirm_primary`](crate::Coordinator::confirm_primary):
//!
//! | what enqueued the key | primary cache | answer |
//! |---|---|---|
//! | its own kind only, or secondary events the cache had seen | holds that object | [`Primary::CaughtUp`] |
//! | a secondary event newer than the cache | — | a consistent read: the same object, not being deleted: [`Primary::Confirmed`]; else [`Primary::Stale`] |
//! | a secondary event whose order cannot be known (a tombstone after a relist; a version that is not a number) | — | the same consistent read |
//! | any | no longer holds that object (changed since the decision) | [`Primary::Stale`] |
//!
//! A stale answer does nothing: the primary's own event (the delete, the replacement) is on its
//! way and enqueues the key again. Never a sleep, and a read only where the cache cannot vouch.
//! A note is settled when a reconcile of its key succeeds.

use std::collections::HashMap;

use kube_informer::ObjectKey;
use kube_informer::version::numeric;
use parking_lot::Mutex;

/// What [`Coordinator::confirm_primary`](crate::Coordinator::confirm_primary) found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Primary {
    /// The cache has seen every change of the primary up to the newest event that enqueued the
    /// key, and still holds the object decided on: act.
    CaughtUp,
    /// The cache could not vouch for it, and a consistent read found the same object (same uid),
    /// not being deleted: act.
    Confirmed,
    /// The object decided on is gone, replaced or being deleted: do not act. Its change (the
    /// delete, the replacement) reaches the cache and enqueues the key again.
    Stale,
}

impl Primary {
    /// Whether the reconcile may act on the cached object.
    ///
    /// ```
    /// use kube_coordination::Primary;
    /// assert!(Primary::CaughtUp.may_act() && Primary::Confirmed.may_act());
    /// assert!(!Primary::Stale.may_act());
    /// ```
    #[must_use]
    pub fn may_act(self) -> bool {
        !matches!(self, Self::Stale)
    }
}

/// Of an object, what tells whether it is still the one a decision was made on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Its uid.
    pub uid: Option<String>,
    /// Whether its deletion has begun (`deletionTimestamp` set).
    pub deleting: bool,
}

impl Identity {
    /// Of `meta`.
    #[must_use]
    pub fn of(meta: &kube::api::ObjectMeta) -> Self {
        Self { uid: meta.uid.clone(), deleting: meta.deletion_timestamp.is_some() }
    }

    /// Whether this is the object with `uid`, and not being deleted.
    #[must_use]
    pub fn is_live(&self, uid: &str) -> bool {
        self.uid.as_deref() == Some(uid) && !self.deleting
    }
}

/// The newest secondary event that enqueued a key, as far as the primary cache must catch up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Noted {
    /// A version the primary cache's can be compared with.
    Version(u64),
    /// An event whose place in the order cannot be known.
    Unknown,
}

impl Noted {
    /// What `version` (`None`: a tombstone) asks of the primary cache.
    pub(crate) fn of(version: Option<&str>) -> Self {
        version.and_then(numeric).map_or(Self::Unknown, Self::Version)
    }

    /// Whether a primary cache that has seen up to `seen` is at least this new.
    pub(crate) fn seen_by(self, seen: Option<u64>) -> bool {
        match self {
            Self::Version(v) => seen.is_some_and(|s| s >= v),
            Self::Unknown => false,
        }
    }

    /// The stricter of two notes.
    fn max(self, other: Self) -> Self {
        match (self, other) {
            (Self::Version(a), Self::Version(b)) => Self::Version(a.max(b)),
            _ => Self::Unknown,
        }
    }
}

/// Per work key, the newest secondary event the primary cache had not seen when it arrived.
#[derive(Debug, Default)]
pub(crate) struct Triggers(Mutex<HashMap<ObjectKey, Noted>>);

impl Triggers {
    /// An event enqueued `key`; the primary cache had not seen it.
    pub(crate) fn note(&self, key: ObjectKey, noted: Noted) {
        let mut m = self.0.lock();
        let e = m.entry(key).or_insert(noted);
        *e = e.max(noted);
    }

    /// What the primary cache must have seen before `key` is acted on; `None`: nothing.
    pub(crate) fn get(&self, key: &ObjectKey) -> Option<Noted> {
        self.0.lock().get(key).copied()
    }

    /// A reconcile of `key` that started when `noted` was the note succeeded: the note goes,
    /// unless a newer event came meanwhile.
    pub(crate) fn settle(&self, key: &ObjectKey, noted: Option<Noted>) {
        let Some(noted) = noted else { return };
        let mut m = self.0.lock();
        if m.get(key) == Some(&noted) {
            m.remove(key);
        }
    }

    /// How many keys carry a note.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ObjectKey::new("default", "web")
    }

    #[test]
    fn notes_keep_the_newest_and_unknown_wins() {
        let t = Triggers::default();
        t.note(key(), Noted::of(Some("7")));
        t.note(key(), Noted::of(Some("5")));
        assert_eq!(t.get(&key()), Some(Noted::Version(7)));
        t.note(key(), Noted::of(None));
        assert_eq!(t.get(&key()), Some(Noted::Unknown));
        t.note(key(), Noted::of(Some("9")));
        assert_eq!(t.get(&key()), Some(Noted::Unknown), "a tombstone's order stays unknown");
        assert_eq!(Noted::of(Some("not-a-number")), Noted::Unknown);
    }

    #[test]
    fn a_note_is_seen_by_a_cache_at_least_as_new() {
        assert!(Noted::Version(7).seen_by(Some(7)));
        assert!(Noted::Version(7).seen_by(Some(8)));
        assert!(!Noted::Version(7).seen_by(Some(6)));
        assert!(!Noted::Version(7).seen_by(None));
        assert!(!Noted::Unknown.seen_by(Some(u64::MAX)));
    }

    #[test]
    fn settling_removes_only_the_note_the_reconcile_started_with() {
        let t = Triggers::default();
        t.note(key(), Noted::Version(7));
        let at_start = t.get(&key());
        t.note(key(), Noted::Version(9)); // an event during the reconcile
        t.settle(&key(), at_start);
        assert_eq!(t.get(&key()), Some(Noted::Version(9)), "the newer event still asks");
        let at_start = t.get(&key());
        t.settle(&key(), at_start);
        assert_eq!(t.len(), 0);
        t.settle(&key(), None);
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn identity_is_live_only_for_the_same_uid_not_being_deleted() {
        let id = |uid: &str, deleting| Identity { uid: Some(uid.into()), deleting };
        assert!(id("a", false).is_live("a"));
        assert!(!id("a", true).is_live("a"));
        assert!(!id("b", false).is_live("a"));
        assert!(!Identity { uid: None, deleting: false }.is_live("a"));
    }
}
