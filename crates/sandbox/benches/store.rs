//! Sandbox throughput, the baseline for the controller's convergence benchmark:
//!
//! * creates per second of ConfigMaps through a real `kube::Client` (serialization, routing,
//!   store), and straight into the store (the store's own cost);
//! * creates per second of a custom resource, `Gadget` (`gadgets.bench.example.com/v1`, whose
//!   CRD's `spec` schema has 10 fields of the shapes CRDs have: strings with `maxLength`,
//!   `pattern` and `enum`, integers with bounds, a boolean, a bounded list of strings, a map of
//!   strings, a nested object, a defaulted field), the same two ways;
//! * watch events per second delivered to 1 and to 10 open watches.
//!
//! What the custom resource comparison measures: what a test pays for a kind served by a CRD
//! rather than built in — the schema's pruning (of the request body, for `fieldValidation`),
//! defaulting and validation on every write, and the read through the schema (clone, prune,
//! default) of the object answered. So that the difference is the schema's and not the size of
//! the objects, the ConfigMaps compared carry 10 data keys holding the same values as the
//! Gadget's fields (as strings), and every Gadget sets all its fields but the defaulted one; the
//! two bodies' JSON sizes are printed. The CRD is created in each fresh sandbox before the timing
//! starts.
//!
//! After criterion's run, the four create cases are timed again in interleaved rounds (each
//! round times every case once, in a rotating order, each in a fresh sandbox) and a summary
//! prints each case's median creates/s and the custom resource / ConfigMap ratios, of the
//! medians and the median of each round's own ratio: the ratio is measured within one run, and
//! interleaving keeps other load on the machine from favouring one case.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, Throughput};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::CustomResource;
use kube::api::{Api, PostParams, WatchEvent, WatchParams};
use kube_sandbox::{Sandbox, SandboxConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

const N: usize = 500;

/// Interleaved rounds of the summary after criterion's run.
const SUMMARY_ROUNDS: usize = 15;

/// The bench's custom resource, as a controller author writes one; its CRD (with the schema)
/// is [`gadget_crd`].
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug)]
#[kube(
    group = "bench.example.com",
    version = "v1",
    kind = "Gadget",
    plural = "gadgets",
    namespaced,
    status = "GadgetStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct GadgetSpec {
    /// Who owns it (a DNS label).
    pub owner: String,
    /// One of bronze, silver, gold.
    pub tier: String,
    /// 0 to 100.
    pub replicas: i32,
    /// 1 to 65535.
    pub port: i32,
    /// Whether it runs.
    pub enabled: bool,
    /// At most 16.
    pub tags: Vec<String>,
    /// Labels to select its pods by.
    pub selector: BTreeMap<String, String>,
    /// What it may use.
    pub limits: GadgetLimits,
    /// Its image.
    pub image: String,
    /// Defaulted to 30 by the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
}

/// The nested object of [`GadgetSpec`].
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub struct GadgetLimits {
    /// Millicores (`500m`) or cores (`2`).
    pub cpu: String,
    /// Memory in MiB.
    pub memory_mib: i64,
}

/// What the gadget controller reports.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
#[serde(rename_all = "camelCase")]
pub struct GadgetStatus {
    /// The generation last acted on.
    pub observed_generation: Option<i64>,
    /// Whether it is ready.
    pub ready: Option<bool>,
}

/// The CRD of [`Gadget`]: one version, v1, with a status subresource and a 10-field spec.
fn gadget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": "gadgets.bench.example.com" },
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList" },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": { "status": {} },
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "required": ["owner", "tier", "replicas"],
                            "properties": {
                                "owner": {
                                    "type": "string",
                                    "maxLength": 63,
                                    "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                                },
                                "tier": { "type": "string", "enum": ["bronze", "silver", "gold"] },
                                "replicas": { "type": "integer", "format": "int32", "minimum": 0, "maximum": 100 },
                                "port": { "type": "integer", "format": "int32", "minimum": 1, "maximum": 65535 },
                                "enabled": { "type": "boolean" },
                                "tags": {
                                    "type": "array",
                                    "maxItems": 16,
                                    "items": { "type": "string", "maxLength": 32 },
                                },
                                "selector": {
                                    "type": "object",
                                    "additionalProperties": { "type": "string", "maxLength": 63 },
                                },
                                "limits": {
                                    "type": "object",
                                    "properties": {
                                        "cpu": { "type": "string", "pattern": "^[0-9]+m?$" },
                                        "memoryMib": { "type": "integer", "minimum": 1 },
                                    },
                                },
                                "image": { "type": "string", "maxLength": 256 },
                                "timeoutSeconds": {
                                    "type": "integer",
                                    "format": "int32",
                                    "minimum": 1,
                                    "maximum": 3600,
                                    "default": 30,
                                },
                            },
                        },
                        "status": {
                            "type": "object",
                            "properties": {
                                "observedGeneration": { "type": "integer", "format": "int64" },
                                "ready": { "type": "boolean" },
                            },
                        },
                    },
                } },
            }],
        },
    })
}

/// The values object `i` carries, the Gadget's and the ConfigMap's alike.
struct Fields {
    owner: String,
    tier: &'static str,
    replicas: i32,
    enabled: bool,
    tags: Vec<String>,
    selector: BTreeMap<String, String>,
}

const PORT: i32 = 8080;
const CPU: &str = "500m";
const MEMORY_MIB: i64 = 256;
const IMAGE: &str = "registry.example.com/bench/gadget:v1.2.3";

fn fields(i: usize) -> Fields {
    Fields {
        owner: format!("team-{}", i % 7),
        tier: ["bronze", "silver", "gold"][i % 3],
        replicas: i32::try_from(i % 100).unwrap(),
        enabled: i.is_multiple_of(2),
        tags: vec!["bench".into(), format!("batch-{}", i / 100), "fast".into()],
        selector: BTreeMap::from([("app".into(), "gadget".into()), ("shard".into(), format!("s{}", i % 4))]),
    }
}

fn gadget(i: usize) -> Gadget {
    let f = fields(i);
    Gadget::new(
        &format!("gadget-{i}"),
        GadgetSpec {
            owner: f.owner,
            tier: f.tier.into(),
            replicas: f.replicas,
            port: PORT,
            enabled: f.enabled,
            tags: f.tags,
            selector: f.selector,
            limits: GadgetLimits { cpu: CPU.into(), memory_mib: MEMORY_MIB },
            image: IMAGE.into(),
            timeout_seconds: None,
        },
    )
}

/// A ConfigMap with 10 data keys holding the Gadget's values as strings.
fn cm(i: usize) -> ConfigMap {
    let f = fields(i);
    let selector: Vec<String> = f.selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    serde_json::from_value(json!({
        "metadata": { "name": format!("cm-{i}") },
        "data": {
            "owner": f.owner,
            "tier": f.tier,
            "replicas": f.replicas.to_string(),
            "port": PORT.to_string(),
            "enabled": f.enabled.to_string(),
            "tags": f.tags.join(","),
            "selector": selector.join(","),
            "cpu": CPU,
            "memoryMib": MEMORY_MIB.to_string(),
            "image": IMAGE,
        },
    }))
    .unwrap()
}

/// The kinds compared.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    ConfigMap,
    Gadget,
}

/// One create case: a kind, through a `kube::Client` or straight into the store.
#[derive(Clone, Copy)]
struct Case {
    kind: Kind,
    through_client: bool,
}

const CASES: [Case; 4] = [
    Case { kind: Kind::ConfigMap, through_client: true },
    Case { kind: Kind::ConfigMap, through_client: false },
    Case { kind: Kind::Gadget, through_client: true },
    Case { kind: Kind::Gadget, through_client: false },
];

impl Case {
    fn name(self) -> &'static str {
        match (self.kind, self.through_client) {
            (Kind::ConfigMap, true) => "create/kube_client",
            (Kind::ConfigMap, false) => "create/store",
            (Kind::Gadget, true) => "create/custom_resource/kube_client",
            (Kind::Gadget, false) => "create/custom_resource/store",
        }
    }

    /// The ConfigMap case compared with.
    fn baseline(self) -> Self {
        Self { kind: Kind::ConfigMap, ..self }
    }
}

/// Times N creates of `case` into a fresh sandbox (the Gadget CRD created first, untimed).
async fn time_creates(case: Case) -> Duration {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    let store = sb.store();
    match case.kind {
        Kind::ConfigMap => {
            let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
            let def = kube_sandbox::builtin_resource("", "v1", "configmaps").unwrap();
            let start = Instant::now();
            for i in 0..N {
                if case.through_client {
                    black_box(api.create(&PostParams::default(), &cm(i)).await.unwrap());
                } else {
                    black_box(
                        store.create(def, "default", serde_json::to_value(cm(i)).unwrap(), None).unwrap(),
                    );
                }
            }
            start.elapsed()
        }
        Kind::Gadget => {
            sb.seed(gadget_crd()).expect("the Gadget CRD is created");
            let def =
                store.find("bench.example.com", "v1", "gadgets").expect("the Gadget CRD is established");
            let api: Api<Gadget> = Api::default_namespaced(sb.client());
            let start = Instant::now();
            for i in 0..N {
                if case.through_client {
                    black_box(api.create(&PostParams::default(), &gadget(i)).await.unwrap());
                } else {
                    let body = serde_json::to_value(gadget(i)).unwrap();
                    black_box(store.create(&def, "default", body, None).unwrap());
                }
            }
            start.elapsed()
        }
    }
}

/// Checks, untimed, that a Gadget is stored as the schema says (defaulted, valid), so the bench
/// times the intended work; returns the JSON sizes of a Gadget's and a ConfigMap's bodies.
async fn check_objects() -> (usize, usize) {
    let sb = Sandbox::with_config(SandboxConfig::bare());
    sb.seed(gadget_crd()).expect("the Gadget CRD is created");
    let api: Api<Gadget> = Api::default_namespaced(sb.client());
    let created = api.create(&PostParams::default(), &gadget(1)).await.unwrap();
    assert_eq!(created.spec.timeout_seconds, Some(30), "the schema's default is applied");
    let mut bad = gadget(2);
    bad.spec.tier = "platinum".into();
    assert!(api.create(&PostParams::default(), &bad).await.is_err(), "the schema is enforced");
    let size = |v: Value| serde_json::to_vec(&v).unwrap().len();
    (size(serde_json::to_value(gadget(1)).unwrap()), size(serde_json::to_value(cm(1)).unwrap()))
}

fn per_second(d: Duration) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = N as f64;
    n / d.as_secs_f64()
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let mid = xs.len() / 2;
    if xs.len().is_multiple_of(2) { f64::midpoint(xs[mid - 1], xs[mid]) } else { xs[mid] }
}

/// The interleaved rounds after criterion's run, and their summary.
fn summary(rt: &tokio::runtime::Runtime) {
    let (gadget_bytes, cm_bytes) = rt.block_on(check_objects());
    // Warm-up: one of each, not counted.
    for case in CASES {
        rt.block_on(time_creates(case));
    }
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); CASES.len()];
    for round in 0..SUMMARY_ROUNDS {
        for k in 0..CASES.len() {
            let c = (round + k) % CASES.len();
            rates[c].push(per_second(rt.block_on(time_creates(CASES[c]))));
        }
    }
    let index = |case: Case| CASES.iter().position(|c| c.name() == case.name()).unwrap();
    println!();
    println!(
        "summary: {SUMMARY_ROUNDS} interleaved rounds of {N} creates per case, median creates/s \
         (body JSON: Gadget {gadget_bytes} B, ConfigMap {cm_bytes} B)"
    );
    for (i, case) in CASES.iter().enumerate() {
        let lo = rates[i].iter().copied().fold(f64::INFINITY, f64::min);
        let hi = rates[i].iter().copied().fold(0.0, f64::max);
        let med = median(rates[i].clone());
        let mut line = format!("  {:<36} {med:>9.0} /s  (min {lo:.0}, max {hi:.0})", case.name());
        if case.kind == Kind::Gadget {
            let b = index(case.baseline());
            let of_medians = med / median(rates[b].clone());
            let paired = median(rates[i].iter().zip(&rates[b]).map(|(cr, cm)| cr / cm).collect());
            line.push_str(&format!(
                "  CR/ConfigMap {of_medians:.2} (median of per-round ratios {paired:.2})"
            ));
        }
        println!("{line}");
    }
}

fn bench(c: &mut Criterion, rt: &tokio::runtime::Runtime) {
    let mut group = c.benchmark_group("sandbox");
    group.throughput(Throughput::Elements(N as u64));
    group.measurement_time(Duration::from_secs(5));
    group.sample_size(10);

    for case in CASES {
        group.bench_function(case.name(), |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += time_creates(case).await;
                    }
                    total
                })
            });
        });
    }

    for watchers in [1usize, 10] {
        group.throughput(Throughput::Elements((N * watchers) as u64));
        group.bench_with_input(BenchmarkId::new("watch_events", watchers), &watchers, |b, &watchers| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let sb = Sandbox::with_config(SandboxConfig::bare());
                        let api: Api<ConfigMap> = Api::default_namespaced(sb.client());
                        let rv = sb.store().resource_version().to_string();
                        let mut streams = Vec::new();
                        for _ in 0..watchers {
                            streams.push(api.watch(&WatchParams::default(), &rv).await.unwrap().boxed());
                        }
                        let start = Instant::now();
                        let readers: Vec<_> = streams
                            .into_iter()
                            .map(|mut s| {
                                tokio::spawn(async move {
                                    let mut n = 0;
                                    while n < N {
                                        if let Some(Ok(WatchEvent::Added(_))) = s.next().await {
                                            n += 1;
                                        }
                                    }
                                })
                            })
                            .collect();
                        let def = kube_sandbox::builtin_resource("", "v1", "configmaps").unwrap();
                        for i in 0..N {
                            sb.store()
                                .create(def, "default", serde_json::to_value(cm(i)).unwrap(), None)
                                .unwrap();
                            if i % 64 == 0 {
                                tokio::task::yield_now().await;
                            }
                        }
                        for r in readers {
                            r.await.unwrap();
                        }
                        total += start.elapsed();
                    }
                    total
                })
            });
        });
    }
    group.finish();
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &rt);
    c.final_summary();
    // Only in a timing run (`cargo bench` passes `--bench`; `cargo test --benches` does not),
    // not with `--list`, `--test` or `--profile-time`.
    let args: Vec<String> = std::env::args().collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--bench") && !has("--list") && !has("--test") && !has("--profile-time") {
        summary(&rt);
    }
}
