//! The request a write belongs to, as a strategy or an admission plugin sees it beside the
//! object: who makes it, whether it is a dry run, and what admission leaves on the request's
//! answer (Warning headers) and on its record (audit annotations). Upstream carries these in the request's `context.Context`
//! (`request.UserFrom`, `warning.AddWarning`, `audit.AddAuditAnnotation`).
//!
//! The HTTP layer runs a request's handler inside [`within`]; the store's verbs are synchronous,
//! so every plugin that runs for that write runs on the same thread and reads [`current`]. A
//! write made outside a request (the simulated cluster's controllers) has no invocation: its
//! user is unknown and its warnings go nowhere, as a controller ignores them.

use std::cell::{Cell, RefCell};
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::access::Attributes;

use crate::user::UserInfo;

/// One request's admission context.
#[derive(Debug, Default)]
pub(crate) struct Invocation {
    /// Who makes the request.
    pub user: Option<UserInfo>,
    /// The server's authorizer, which admission's CEL `authorizer` asks (none: every check
    /// allowed, as the default authorization mode allows every request).
    pub authorizer: Option<Authorizer>,
    /// Whether it is a dry run (`dryRun=All`), known once its query is read.
    dry_run: Cell<bool>,
    /// What admission leaves on the request.
    left: RefCell<Left>,
}

/// An authorizer: whether it allows what the attributes ask, and why (upstream's
/// `authorizer.Authorizer`, whose explicit denials RBAC never gives).
#[derive(Clone)]
pub(crate) struct Authorizer(pub(crate) Arc<Decide>);

/// What an [`Authorizer`] runs: allowed, and why.
pub(crate) type Decide = dyn Fn(&Attributes) -> (bool, String) + Send + Sync;

impl Authorizer {
    /// Whether it allows `attrs`, and why.
    pub(crate) fn authorize(&self, attrs: &Attributes) -> (bool, String) {
        (self.0)(attrs)
    }
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authorizer")
    }
}

/// What admission added to a request while it ran.
#[derive(Debug, Default)]
pub(crate) struct Left {
    /// Warning headers, in the order added.
    pub warnings: Vec<String>,
    /// Audit annotations (a key set twice keeps its first value, as upstream's audit context).
    pub annotations: BTreeMap<String, String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Invocation>> = const { RefCell::new(None) };
}

impl Invocation {
    /// A request of `user`.
    pub(crate) fn new(user: UserInfo) -> Self {
        Self { user: Some(user), ..Self::default() }
    }

    /// The request of `user`, asking `authorizer` (none: every check allowed) what others may do.
    pub(crate) fn authorized_by(user: UserInfo, authorizer: Option<Authorizer>) -> Self {
        Self { authorizer, ..Self::new(user) }
    }

    /// Whether the request is a dry run.
    pub(crate) fn dry_run(&self) -> bool {
        self.dry_run.get()
    }

    /// Marks the request a dry run.
    pub(crate) fn set_dry_run(&self, dry_run: bool) {
        self.dry_run.set(dry_run);
    }

    /// Adds a Warning header to the answer.
    pub(crate) fn warn(&self, text: String) {
        self.left.borrow_mut().warnings.push(text);
    }

    /// Adds an audit annotation to the request's record.
    pub(crate) fn annotate(&self, key: String, value: String) {
        self.left.borrow_mut().annotations.entry(key).or_insert(value);
    }
}

/// Runs `handle` as the request `inv`; what admission left on it, with its result.
pub(crate) fn within<R>(inv: Invocation, handle: impl FnOnce() -> R) -> (R, Left) {
    /// Puts back the invocation that was current, even when the handler panics (the server
    /// goes on after a panic: the thread must not keep a finished request).
    struct Restore(Option<Option<Invocation>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            if let Some(outer) = self.0.take() {
                CURRENT.with(|c| c.replace(outer));
            }
        }
    }
    let mut restore = Restore(Some(CURRENT.with(|c| c.replace(Some(inv)))));
    let out = handle();
    let outer = restore.0.take().unwrap_or_default();
    let inv = CURRENT.with(|c| c.replace(outer)).unwrap_or_default();
    (out, inv.left.into_inner())
}

/// Reads the request being handled on this thread, if any.
pub(crate) fn current<R>(read: impl FnOnce(Option<&Invocation>) -> R) -> R {
    CURRENT.with(|c| read(c.borrow().as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_invocation_is_seen_only_while_it_runs_and_keeps_what_was_left() {
        assert!(current(|i| i.is_none()));
        let (name, left) = within(Invocation::new(UserInfo::new("alice", ["dev"])), || {
            current(|i| {
                let i = i.expect("inside");
                i.warn("careful".into());
                i.annotate("k".into(), "first".into());
                i.annotate("k".into(), "second".into());
                i.user.as_ref().map(|u| u.name.clone())
            })
        });
        assert_eq!(name.as_deref(), Some("alice"));
        assert_eq!(left.warnings, ["careful"]);
        assert_eq!(left.annotations["k"], "first");
        assert!(current(|i| i.is_none()));
    }
}
