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
//! | [`cli`] | the command line: `run`, flags, leader election, logging, fail-fast checks |
//! | [`client`] | the Kubernetes client: kubeconfig resolution, user agent, fence and metrics layers |
//! | [`events`] | Events published off the reconcile path, as client-go's recorder does |
//! | [`metrics`] | `rest_client_requests_total` (the reconciles' metrics are the coordination crate's) |
//! | [`ops`] | the operations endpoint: `/metrics`, `/healthz`, `/readyz` |
//! | [`process`] | the process's CPU, memory, threads and file descriptors, read at each scrape |
//! | [`embedded`] | `sandbox`: the embedded API server, the controller on it, the `--demo` walkthrough |

pub mod annotation;
pub mod cached;
pub mod cli;
pub mod client;
pub mod controller;
pub mod decision;
pub mod embedded;
pub mod events;
pub mod metrics;
pub mod ops;
pub mod process;

pub use controller::{Controller, Options, Scope};
