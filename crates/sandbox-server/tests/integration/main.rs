//! The `kube-sandbox` binary in its own process: it serves, a real client uses it, it stops on a
//! signal with exit 0, it refuses bad input in one line; and its memory per stored object stays
//! within its budget.
//!
//! One test binary for the crate, a module per subject.

mod binary;
mod common;
mod memory;
