//! Object keys: `namespace/name`, or `name` for cluster-scoped objects (client-go's
//! `MetaNamespaceKeyFunc` / `SplitMetaNamespaceKey`).

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use kube::Resource;

/// Where an object lives: its namespace (empty when cluster-scoped) and name.
///
/// The work queue's key type: cheap to clone (two `Arc<str>`), hashable, and printed as client-go
/// prints keys.
///
/// ```
/// use kube_informer::ObjectKey;
/// let key: ObjectKey = "default/web".parse()?;
/// assert_eq!((key.namespace(), key.name()), ("default", "web"));
/// assert_eq!(key.to_string(), "default/web");
/// assert_eq!("node-1".parse::<ObjectKey>()?.to_string(), "node-1");
/// assert!("a/b/c".parse::<ObjectKey>().is_err());
/// # Ok::<(), kube_informer::KeyError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    namespace: Arc<str>,
    name: Arc<str>,
}

/// A key string that is not `name` or `namespace/name`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format: {key:?} (want \"namespace/name\" or \"name\")")]
pub struct KeyError {
    /// The key that could not be split.
    pub key: String,
}

impl ObjectKey {
    /// A key from its parts; an empty namespace means cluster-scoped.
    #[must_use]
    pub fn new(namespace: &str, name: &str) -> Self {
        Self { namespace: namespace.into(), name: name.into() }
    }

    /// The key of an object.
    #[must_use]
    pub fn of<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self::new(meta.namespace.as_deref().unwrap_or(""), meta.name.as_deref().unwrap_or(""))
    }

    /// The namespace; empty for cluster-scoped objects.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// The name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl FromStr for ObjectKey {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, KeyError> {
        let mut parts = s.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(name), None, None) if !name.is_empty() => Ok(Self::new("", name)),
            (Some(ns), Some(name), None) if !ns.is_empty() && !name.is_empty() => Ok(Self::new(ns, name)),
            _ => Err(KeyError { key: s.to_owned() }),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self:?}", self = self.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_keys_are_errors_naming_the_key() {
        for bad in ["", "/", "/x", "ns/", "a/b/c"] {
            let err = bad.parse::<ObjectKey>().unwrap_err();
            assert_eq!(err.key, bad);
            assert!(err.to_string().contains(&format!("{bad:?}")));
        }
    }
}
