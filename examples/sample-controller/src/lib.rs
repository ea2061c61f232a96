//! sample-controller: kubernetes/sample-controller's `Foo` — a custom resource naming a
//! Deployment and its replica count — built from the same parts as the counter-controller
//! (informer, workqueue, coordination, election) and its process plumbing.
//!
//! | module | what it is |
//! |---|---|
//! | [`foo`] | the `Foo` kind and its CRD |
//! | [`controller`] | informers on Foos and Deployments, the queue, `sync` |
//! | [`cli`] | `run` against a cluster; leader election and sharding flags |
//! | [`demo`] | `sandbox --demo`: the embedded API server, the controller on it, the walkthrough |

pub mod cli;
pub mod controller;
pub mod demo;
pub mod foo;

pub use controller::{Controller, Options};
pub use foo::{Foo, FooSpec, FooStatus};
