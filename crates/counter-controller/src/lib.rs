//! counter-controller: the annotation `counter.example.com/desired` on a ConfigMap sets the
//! replicas of the same-named Deployment, which the controller creates, scales and deletes.
//!
//! Built from four parts and no controller framework — **Informer → Workqueue → Worker →
//! Reconcile**:
//!
//! | module | what it is |
//! |---|---|
//! | [`annotation`] | the desired count, parsed strictly |
//! | [`decision`] | the decision table, a pure function |
//! | [`cached`] | what the informer caches hold: only what the decision and Events read |
//! | [`controller`] | informers, queue, workers, and the executor of decisions |
//! | [`cli`] | the command line: `run` and its fail-fast check; `sandbox [--demo]`, the walkthrough |
//!
//! What every controller's binary needs around it — the shared flags, start-up with leader
//! election or sharding, the client, logging, signals, `/metrics` `/healthz` `/readyz`, Events,
//! the sandbox runner — is the `kube-manager` crate's.

pub mod annotation;
pub mod cached;
pub mod cli;
pub mod controller;
pub mod decision;

pub use controller::{AGENT, Controller};
