//! The counter-controller's integration tests: the controller in-process on the sandbox, the binary
//! in its own process, the deploy manifests, the monitoring rules, the tutorials.
//!
//! One test binary for the crate, a module per subject: kube and the sandbox are linked once
//! per crate, not once per file, which keeps a cold `cargo test` short.

mod cli;
mod common;
mod controller;
mod deploy;
mod e2e;
mod ha;
mod memory;
mod monitoring;
mod sharding;
mod tutorial;
