//! `metrics.k8s.io/v1beta1`: metrics-server's resource metrics API, which a cluster serves
//! through an APIService when metrics-server runs, and the sandbox serves itself: `pods` and
//! `nodes`, `get` and `list` only, made up on each request (see `crate::metrics`).

use super::resource;
use crate::resource::{Answer, BuiltIn, Metrics, ResourceDef, Strategy};

const fn answered(of: Metrics) -> Strategy {
    Strategy::BuiltIn(BuiltIn { answer: Answer::Metrics(of), ..BuiltIn::PLAIN })
}

pub(super) fn resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef {
            strategy: answered(Metrics::Nodes),
            ..resource!("metrics.k8s.io", "v1beta1", "nodes", "", "NodeMetrics", [], namespaced: false)
        },
        ResourceDef {
            strategy: answered(Metrics::Pods),
            ..resource!("metrics.k8s.io", "v1beta1", "pods", "", "PodMetrics", [], namespaced: true)
        },
    ]
}
