//! What a controller is told when it is built: where it works and how hard.
//!
//! [`Startup::options`](crate::Startup::options) fills them from the flags; a test builds them
//! by hand.

use std::time::Duration;

use crate::events::EventConfig;

/// Which namespaces the controller watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// One namespace.
    Namespace(String),
    /// Every namespace.
    All,
}

impl std::fmt::Display for Scope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Namespace(ns) => f.write_str(ns),
            Self::All => f.write_str("*"),
        }
    }
}

/// Controller settings shared by every controller of these parts.
///
/// ```
/// use kube_manager::{Options, Scope};
///
/// let options = Options { scope: Scope::All, workers: 8, ..Options::default() };
/// assert_eq!(options.resync.as_secs(), 30);
/// ```
#[derive(Debug, Clone)]
pub struct Options {
    /// Namespaces to watch.
    pub scope: Scope,
    /// Concurrent reconciles.
    pub workers: usize,
    /// Informer resync period; zero disables it.
    pub resync: Duration,
    /// This replica's identity, reported as the Events' `reportingInstance`.
    pub identity: String,
    /// Which Events, and their budgets.
    pub events: EventConfig,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            scope: Scope::Namespace("default".into()),
            workers: 2,
            resync: Duration::from_secs(30),
            identity: kube_lease_election::hostname(),
            events: EventConfig::default(),
        }
    }
}
