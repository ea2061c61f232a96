//! sample-controller: kubernetes/sample-controller's `Foo` — a custom resource naming a
//! Deployment and its replica count — built from the same parts as the counter-controller
//! (informer, workqueue, coordination, election) and the `kube-manager` crate (flags, start-up,
//! logging, signals, metrics and probes, Events, the sandbox runner).
//!
//! | module | what it is |
//! |---|---|
//! | [`foo`] | the `Foo` kind and its CRD; its `v1` version |
//! | [`conversion`] | the conversion webhook between `v1alpha1` and `v1` |
//! | [`controller`] | informers on Foos and Deployments, the queue, `sync` |
//! | [`cli`] | `run` against a cluster, with leader election or sharding; `sandbox [--demo]` (the embedded API server, the controller on it, the walkthrough) |

// `foo` is the kind's name here, not a placeholder.
#![allow(clippy::disallowed_names)]

pub mod cli;
pub mod controller;
pub mod conversion;
pub mod foo;

pub use controller::{Controller, Options};
pub use foo::{Foo, FooSpec, FooStatus};
