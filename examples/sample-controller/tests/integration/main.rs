//! The sample-controller's integration tests, on the sandbox.
//!
//! One test binary for the crate, a module per subject: kube and the sandbox are linked once
//! per crate, not once per file, which keeps a cold `cargo test` short.

mod cli;
mod common;
mod controller;
mod conversion;
mod crd;
mod deploy;
mod parts;
