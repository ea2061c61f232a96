//! The sandbox's integration tests: a real `kube::Client`, kubectl and the Python client against
//! it.
//!
//! One test binary for the crate, a module per subject: kube and the sandbox are linked once
//! per crate, not once per file, which keeps a cold `cargo test` short.

mod admission;
mod admission_policy;
mod admission_webhook;
mod api;
mod bad_input;
mod builtin;
mod cluster;
mod conformance_api_machinery;
mod conformance_apps;
mod crd;
mod crd_conversion;
mod crd_openapi;
mod fuzz;
mod kube_runtime;
mod kubectl;
mod kubectl_cluster;
mod kubectl_workloads;
mod module_graph;
mod pod_exec;
mod pod_logs;
mod probes;
mod protobuf;
mod rbac;
mod resource_metrics;
mod upstream;
mod validation_inventory;
mod watch;
mod webhook_server;
