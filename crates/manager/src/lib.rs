//! What every controller's binary needs around its controller — the role controller-runtime's
//! manager plays — so a controller crate holds only its own decision, caches and controller.
//!
//! | module | what it is |
//! |---|---|
//! | [`flags`] | the flags every `run` shares (client, scope, workers, resync, logs, metrics address, Events, leader election, sharding) and their checks |
//! | [`startup`] | `run`'s set-up: configuration, registry, membership (alone, elected, sharded), the fenced client; then the operations endpoint and the coordinated run |
//! | [`client`] | the Kubernetes client: kubeconfig resolution, user agent, fence, shard selector and metrics layers |
//! | [`logging`] | one line per event: human on a terminal, JSON for machines |
//! | [`signal`] | SIGINT and SIGTERM, the stop of a `run` |
//! | [`ops`] | the operations endpoint: `/metrics`, `/healthz`, `/readyz` |
//! | [`metrics`] | `rest_client_requests_total`, counted from the requests sent |
//! | [`process`] | the process's CPU, memory, threads and file descriptors, read at each scrape |
//! | [`events`] | Events published off the reconcile path, as client-go's recorder does |
//! | [`options`] | what a controller is built with: its scope, workers, resync, identity, Events |
//! | `embedded` | `sandbox` (with the `sandbox` feature): the embedded API server, the controller on it, its walkthrough |
//!
//! A controller's `run` reads, top to bottom:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use kube_manager::{Options, Startup, client::Agent, flags::RunArgs};
//! # struct Controller;
//! # impl Controller {
//! #     fn new(_: kube::Client, _: Options, _: &mut prometheus_client::registry::Registry) -> Arc<Self> { Arc::new(Self) }
//! #     fn has_synced(&self) -> bool { true }
//! #     async fn run_coordinated(self: Arc<Self>, _: kube_coordination::Coordination, _: impl Future) -> bool { true }
//! # }
//! const AGENT: Agent = Agent { name: "my-controller", version: "0.1.0", watched: &["configmaps"] };
//!
//! async fn run(args: RunArgs) -> Result<(), kube_manager::Error> {
//!     let mut start = Startup::connect(&args, AGENT).await?;
//!     let controller = Controller::new(start.client.clone(), start.options(&args), &mut start.registry);
//!     let c = Arc::clone(&controller);
//!     start
//!         .serve_and_run(args.metrics_addr, move || c.has_synced(), |how| {
//!             controller.run_coordinated(how, kube_manager::signal::shutdown_signal())
//!         })
//!         .await
//! }
//! ```

pub mod client;
#[cfg(feature = "sandbox")]
pub mod embedded;
mod error;
pub mod events;
pub mod flags;
pub mod logging;
pub mod metrics;
pub mod ops;
pub mod options;
pub mod process;
pub mod signal;
pub mod startup;

pub use error::Error;
pub use options::{Options, Scope};
pub use startup::Startup;
