//! The sandbox — an embedded Kubernetes API server — as a server of its own: the `kube-sandbox`
//! binary, and the flags and start-up it shares with every controller's `sandbox` command.
//!
//! | module | what it is |
//! |---|---|
//! | [`flags`] | the sandbox's flags: address, kubeconfig, the simulated cluster |
//! | [`start`] | serving: the address checked, the sandbox served over HTTPS, its kubeconfig written |
//!
//! The flags are a `clap` [`Args`](clap::Args) struct, so a binary flattens them into its own
//! command next to flags of its own (a controller's `sandbox` adds `--demo`):
//!
//! ```no_run
//! use clap::Parser;
//! use kube_sandbox_server::ServerArgs;
//!
//! #[derive(Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     server: ServerArgs,
//! }
//!
//! # async fn f() -> Result<(), kube_sandbox_server::Error> {
//! let running = Cli::parse().server.start().await?;
//! // prints `sandbox API server listening on https://…` and `export KUBECONFIG=…`
//! let client = running.sandbox().client(); // or any client, through running.kubeconfig()
//! running.shutdown();
//! # Ok(())
//! # }
//! ```

mod error;
pub mod flags;
pub mod start;

pub use error::Error;
pub use flags::ServerArgs;
pub use start::{Running, serve};
