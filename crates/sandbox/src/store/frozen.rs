//! The form the store keeps objects in: their JSON text, compressed. A parsed [`Value`] costs
//! about ten times its JSON (every map, however small, is a B-tree node of some 600 bytes; a pod
//! with its `managedFields` holds over a hundred), and the store holds every object plus the
//! versions its history keeps for watches that resume. Kept as text, an object costs what it
//! weighs; it is thawed into a `Value` when a verb, a list page or a watch reads it — as upstream
//! keeps objects serialized in etcd and decodes them on read.
//!
//! The text is LZ4-compressed against a [`Dictionaries`] entry of its resource: the JSON of the
//! largest object of that resource stored so far. Objects of a kind share most of their text —
//! field names, images, labels, the shape of `managedFields` — so a pod's 4.7 KB keep a few
//! hundred bytes; decompressing costs a tenth of parsing.
//!
//! Writes still work on `Value`s: a verb reads the current object, changes it, and the commit
//! freezes the result once. The last objects written stay parsed beside their frozen form
//! ([`Recent`]): what was just written is what is read next — the simulated controllers' next
//! look, the write after, every open watch — so the common read parses nothing, and the live
//! watch feed carries those same parsed objects.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use serde_json::Value;

use super::storage::Key;

/// Text an object is compressed against; kept by every object compressed with it.
type Dictionary = Arc<[u8]>;

/// An object as the store keeps it: its JSON, compressed, immutable, shared by the object map
/// and the history.
pub struct Frozen {
    dictionary: Option<Dictionary>,
    len: usize,
    data: Box<[u8]>,
}

impl Frozen {
    /// Freezes `obj` as it stands, uncompressed (the store compresses what it keeps against its
    /// resource's dictionary).
    #[cfg(test)]
    #[must_use]
    pub(crate) fn new(obj: &Value) -> Arc<Self> {
        let json = to_json(obj);
        Arc::new(Self { dictionary: None, len: json.len(), data: json.into_boxed_slice() })
    }

    /// The object, parsed again.
    #[must_use]
    pub(crate) fn thaw(&self) -> Value {
        // The text was written from a `Value`, so it parses; `float_roundtrip` keeps every
        // number as it was written. Anything else is a bug of the store's, said out loud.
        serde_json::from_slice(&self.json()).unwrap_or_else(|e| {
            tracing::error!(error = %e, "a stored object did not thaw");
            Value::Null
        })
    }

    /// The object's JSON.
    #[must_use]
    pub(crate) fn json(&self) -> Cow<'_, [u8]> {
        match &self.dictionary {
            None => Cow::Borrowed(&self.data),
            // Compressed by `Dictionaries::freeze` from this length with this dictionary.
            Some(d) => {
                let json = lz4_flex::block::decompress_with_dict(&self.data, self.len, d);
                Cow::Owned(json.unwrap_or_else(|e| {
                    tracing::error!(error = %e, "a stored object did not decompress");
                    Vec::new()
                }))
            }
        }
    }

    /// Bytes kept for the object.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn size(&self) -> usize {
        self.data.len()
    }

    /// Bytes of the object's JSON text, once thawed.
    #[must_use]
    pub(crate) fn json_len(&self) -> usize {
        self.len
    }
}

fn to_json(obj: &Value) -> Vec<u8> {
    // Serialising a `Value` cannot fail: its maps have string keys.
    serde_json::to_vec(obj).unwrap_or_default()
}

impl std::fmt::Debug for Frozen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.json()))
    }
}

/// Objects smaller than this are kept as they are: there is too little to gain.
const SMALLEST_COMPRESSED: usize = 256;

/// Each resource's dictionary: the largest object of it stored so far, replaced when one half as
/// large again comes (objects frozen before keep theirs), so it grows to what the resource's
/// objects become — a pod's first version has no status yet.
#[derive(Default, Clone)]
pub(super) struct Dictionaries(HashMap<&'static str, Dictionary>);

impl Dictionaries {
    /// Freezes `obj` of `storage`, compressed.
    pub(super) fn freeze(&mut self, storage: &'static str, obj: &Value) -> Arc<Frozen> {
        let json = to_json(obj);
        let len = json.len();
        if len < SMALLEST_COMPRESSED {
            return Arc::new(Frozen { dictionary: None, len, data: json.into_boxed_slice() });
        }
        let dictionary = match self.0.get(storage) {
            Some(d) if len <= d.len() + d.len() / 2 => Arc::clone(d),
            _ => {
                let d: Dictionary = Arc::from(json.as_slice());
                self.0.insert(storage, Arc::clone(&d));
                d
            }
        };
        let data = lz4_flex::block::compress_with_dict(&json, &dictionary).into_boxed_slice();
        Arc::new(Frozen { dictionary: Some(dictionary), len, data })
    }
}

/// The storages whose objects [`Recent`] keeps for good: those of the kinds whose strategy says
/// they are read by admission ([`ResourceDef::read_by_admission`](crate::resource::ResourceDef::read_by_admission)).
static KEPT_FOR_GOOD: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
    crate::catalog::RESOURCES.iter().filter(|d| d.read_by_admission()).map(|d| d.storage).collect()
});

/// The last objects written, parsed, by where they live: at most `cap` of them, the oldest
/// write forgotten first, and every object of [`KEPT_FOR_GOOD`]. Each is the object as stored,
/// so a read may use it instead of thawing.
pub(super) struct Recent {
    by_key: HashMap<Key, (u64, Arc<Value>)>,
    order: VecDeque<(Key, u64)>,
    cap: usize,
}

impl Recent {
    pub(super) fn new(cap: usize) -> Self {
        Self { by_key: HashMap::new(), order: VecDeque::new(), cap }
    }

    /// `obj` was written at `key` with version `rv`. What it no longer holds goes to `garbage`,
    /// to be freed once the store's lock is let go.
    pub(super) fn put(&mut self, key: &Key, rv: u64, obj: &Arc<Value>, garbage: &mut Vec<Arc<Value>>) {
        if self.cap == 0 {
            return;
        }
        garbage.extend(self.by_key.insert(key.clone(), (rv, Arc::clone(obj))).map(|(_, v)| v));
        if KEPT_FOR_GOOD.contains(&key.0) {
            // Read on every create: never forgotten, so never queued to be.
            return;
        }
        self.order.push_back((key.clone(), rv));
        while self.order.len() > self.cap {
            let Some((old, at)) = self.order.pop_front() else { break };
            // A key written again since is kept for its later write.
            if self.by_key.get(&old).is_some_and(|(v, _)| *v == at) {
                garbage.extend(self.by_key.remove(&old).map(|(_, v)| v));
            }
        }
    }

    /// The object at `key` is gone.
    pub(super) fn forget(&mut self, key: &Key, garbage: &mut Vec<Arc<Value>>) {
        garbage.extend(self.by_key.remove(key).map(|(_, v)| v));
    }

    /// The object at `key`, if it was written lately.
    pub(super) fn get(&self, key: &Key) -> Option<Arc<Value>> {
        self.by_key.get(key).map(|(_, v)| Arc::clone(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_object_thaws_as_it_was_frozen_numbers_included() {
        let obj = json!({
            "metadata": { "name": "a", "labels": { "app": "web" } },
            "spec": { "ratio": 0.1, "big": 18_446_744_073_709_551_615_u64, "neg": -7, "f": 2.000_000_000_000_000_4 },
            "data": { "s": "é \" \\ \u{1}" },
        });
        let frozen = Frozen::new(&obj);
        assert_eq!(frozen.thaw(), obj);
        assert!(frozen.json().len() < 200);
        let mut dictionaries = Dictionaries::default();
        let big = |name: &str| {
            json!({ "metadata": { "name": name, "labels": { "app": "web" } },
                    "data": { "text": "the same long value in every object of the kind ".repeat(10) } })
        };
        let first = dictionaries.freeze("configmaps.", &big("first"));
        let second = dictionaries.freeze("configmaps.", &big("second"));
        assert_eq!((first.thaw(), second.thaw()), (big("first"), big("second")));
        // Against the first, the second keeps little more than its name.
        assert!(second.size() * 10 < second.json().len(), "{} of {}", second.size(), second.json().len());
        assert_eq!(dictionaries.freeze("configmaps.", &obj).thaw(), obj);
    }

    #[test]
    fn recent_keeps_the_last_writes_and_a_key_written_again_stays() {
        let key = |n: &str| ("configmaps.", "default".to_owned(), n.to_owned());
        let mut recent = Recent::new(2);
        let mut garbage = Vec::new();
        recent.put(&key("a"), 1, &Arc::new(json!(1)), &mut garbage);
        recent.put(&key("b"), 2, &Arc::new(json!(2)), &mut garbage);
        recent.put(&key("a"), 3, &Arc::new(json!(3)), &mut garbage);
        // a's first write is let go of, for the caller to free.
        assert_eq!(garbage.iter().map(|v| (**v).clone()).collect::<Vec<_>>(), [json!(1)]);
        // Three writes, room for two: the oldest (a at 1) goes, and a stays for its write at 3.
        recent.put(&key("c"), 4, &Arc::new(json!(4)), &mut garbage);
        assert_eq!(recent.get(&key("a")).as_deref(), Some(&json!(3)));
        assert_eq!(recent.get(&key("b")), None);
        assert_eq!(recent.get(&key("c")).as_deref(), Some(&json!(4)));
        assert_eq!(garbage.len(), 2, "b went");
        recent.forget(&key("c"), &mut garbage);
        assert_eq!(recent.get(&key("c")), None);
    }

    #[test]
    fn recent_keeps_every_namespace() {
        let ns = |n: &str| ("namespaces.", String::new(), n.to_owned());
        let mut recent = Recent::new(1);
        let mut garbage = Vec::new();
        recent.put(&ns("default"), 1, &Arc::new(json!("default")), &mut garbage);
        for i in 0..3 {
            recent.put(
                &("configmaps.", "default".to_owned(), format!("c{i}")),
                2 + i,
                &Arc::new(json!(i)),
                &mut garbage,
            );
        }
        assert_eq!(recent.get(&ns("default")).as_deref(), Some(&json!("default")));
    }

    #[test]
    fn the_storages_kept_for_good_are_the_kinds_admission_reads() {
        let kinds = [
            ("", "namespaces"),
            ("", "serviceaccounts"),
            ("scheduling.k8s.io", "priorityclasses"),
            ("", "limitranges"),
            ("storage.k8s.io", "storageclasses"),
            ("", "resourcequotas"),
        ];
        for (group, plural) in kinds {
            let def = crate::catalog::find(group, "v1", plural).expect("built in");
            assert!(KEPT_FOR_GOOD.contains(&def.storage), "{}", def.storage);
        }
    }
}
