//! Convergence benchmarks, on the sandbox.
//!
//! * `process` (the default; `CONVERGENCE_MODE=process`): what a user runs — the controller binary
//!   in its own process against the sandbox served over HTTPS from this process, N realistic
//!   ConfigMaps created, scaled and deleted, next to a *raw writer* that issues the same writes
//!   straight through `kube::Client` at the same concurrency, and an *oracle* that does so as the
//!   user's changes land, in the same run. See `process.rs`.
//! * `seed` (`CONVERGENCE_MODE=seed`): this controller's cache reads against the seed's
//!   GET-per-reconcile, both in-process. See `seed.rs`.
//!
//! * `sharding` (`CONVERGENCE_MODE=sharding`): 1 to 4 `--sharding` replicas, each its own
//!   process, against one sandbox; per-replica memory and work, and what a change of the member set
//!   costs. See `sharding.rs`.
//!
//! * `scale` (`CONVERGENCE_MODE=scale`): `TOTAL` ConfigMaps of which `ANNOTATED` are the
//!   controller's (50,000 / 5,000): start-up time and memory next to a bare list and a raw
//!   writer, in one namespace and over 100 with `--all-namespaces`. See `scale.rs`.
//!
//! `CONVERGENCE_MODE=all` runs the first two.

mod feed;
mod process;
mod scale;
mod seed;
mod sharding;
mod writer;

fn main() {
    if let Ok(spec) = std::env::var(writer::ENV) {
        return writer::main(&spec); // this process is a baseline's writer
    }
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list`
    }
    let mode = std::env::var("CONVERGENCE_MODE").unwrap_or_else(|_| "process".into());
    if matches!(mode.as_str(), "process" | "all") {
        process::main();
    }
    if matches!(mode.as_str(), "seed" | "all") {
        seed::main();
    }
    if mode == "sharding" {
        sharding::main();
    }
    if mode == "scale" {
        scale::main();
    }
}
