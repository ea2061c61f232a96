//! The Kubernetes client: where the cluster comes from, who we say we are, and the layers every
//! request goes through.
//!
//! * Configuration, in kubectl's order: `--kubeconfig`, `$KUBECONFIG` (a colon-separated list,
//!   merged; an empty value counts as unset, as kubectl treats it), `~/.kube/config`, then the
//!   in-cluster service account.
//! * `User-Agent: <controller>/<version> (<identity>)` ([`Agent`]), so an API server's audit log (and the
//!   sandbox's request record) tells replicas apart.
//! * Layers, outermost first: the leader-election [`Fence`](kube_lease_election::Fence) (a refused write never
//!   leaves the process and is not counted), then `rest_client_requests_total`.

use std::path::{Path, PathBuf};

use http::{HeaderValue, header};
use kube::client::ClientBuilder;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

use kube_lease_election::selector::ShardSelectorLayer;

use crate::Error;
use crate::metrics::RestClientMetrics;

/// Which controller a client speaks for: its `User-Agent` product, and the resources it lists and
/// watches (those a sharded-by-namespace replica asks the API server to filter).
///
/// ```
/// use kube_manager::client::Agent;
///
/// const AGENT: Agent = Agent {
///     name: "my-controller",
///     version: "0.1.0",
///     watched: &["configmaps", "deployments"],
/// };
/// assert_eq!(AGENT.user_agent("pod-7f9c_1a2b"), "my-controller/0.1.0 (pod-7f9c_1a2b)");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Agent {
    /// The product name, e.g. `counter-controller`.
    pub name: &'static str,
    /// Its version.
    pub version: &'static str,
    /// The plural resources its informers list and watch.
    pub watched: &'static [&'static str],
}

impl Agent {
    /// `<name>/<version> (<identity>)`.
    #[must_use]
    pub fn user_agent(&self, identity: &str) -> String {
        format!("{}/{} ({identity})", self.name, self.version)
    }
}

/// Where the configuration came from, for the startup log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// Kubeconfig files.
    Kubeconfig(Vec<PathBuf>),
    /// The in-cluster service account.
    InCluster,
}

/// Reads and merges `paths` (at least one).
fn read_kubeconfig(paths: &[PathBuf]) -> Result<Kubeconfig, Error> {
    let mut merged: Option<Kubeconfig> = None;
    for path in paths {
        // Read the file ourselves: kube's error repeats the I/O cause in its message and its source.
        let text = std::fs::read_to_string(path)
            .map_err(|source| Error::ReadKubeconfig { path: path.clone(), source })?;
        // The YAML error draws the offending line below its message; the message is enough here.
        let kc = Kubeconfig::from_yaml(&text).map_err(|e| Error::InvalidKubeconfig {
            path: path.clone(),
            message: e.to_string().lines().next().unwrap_or("").to_owned(),
        })?;
        merged = Some(match merged {
            None => kc,
            Some(m) => m.merge(kc).map_err(|source| Error::MergeKubeconfig { path: path.clone(), source })?,
        });
    }
    Ok(merged.expect("at least one kubeconfig path"))
}

/// Resolves the cluster configuration (see the module docs for the order).
///
/// # Errors
///
/// One line naming the file that cannot be read or used, or saying that nothing was found.
pub async fn config(kubeconfig: Option<&Path>) -> Result<(Config, Source), Error> {
    let from_env = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty());
    let paths: Vec<PathBuf> = match (kubeconfig, from_env) {
        (Some(p), _) => vec![p.to_owned()],
        (None, Some(list)) => std::env::split_paths(&list).filter(|p| !p.as_os_str().is_empty()).collect(),
        (None, None) => {
            let home = std::env::var_os("HOME").map(|h| Path::new(&h).join(".kube/config"));
            home.filter(|p| p.is_file()).into_iter().collect()
        }
    };
    if paths.is_empty() {
        let config = Config::incluster().map_err(|source| Error::NoConfig { source })?;
        return Ok((config, Source::InCluster));
    }
    let kc = read_kubeconfig(&paths)?;
    let config =
        Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default()).await.map_err(|source| {
            let paths = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(":");
            Error::UnusableKubeconfig { paths, source }
        })?;
    Ok((config, Source::Kubeconfig(paths)))
}

/// Builds a client of `agent` for `config` that identifies as `identity`, counts its requests
/// into `metrics`, with a `fence` refuses writes while the fence is closed, and with a `selector`
/// adds it to its lists and watches of the agent's resources (sharding by namespace).
///
/// # Errors
///
/// The configuration cannot give a client (for example a bad certificate).
pub fn build_for(
    agent: Agent,
    mut config: Config,
    identity: &str,
    metrics: &RestClientMetrics,
    fence: Option<&kube_lease_election::Fence>,
    selector: Option<kube_lease_election::selector::SelectorCell>,
) -> Result<Client, Error> {
    let url = config.cluster_url.clone();
    if let Ok(ua) = HeaderValue::from_str(&agent.user_agent(identity)) {
        config.headers.push((header::USER_AGENT, ua));
    }
    let host = url.authority().map_or_else(|| url.to_string(), ToString::to_string);
    let builder = ClientBuilder::try_from(config)
        .map_err(|source| Error::BuildClient { url: url.to_string(), source })?
        .with_layer(&metrics.layer(&host))
        .with_layer(&tower::util::option_layer(
            selector.map(|s| ShardSelectorLayer::new(agent.watched.iter().copied(), s)),
        ))
        .with_layer(&tower::util::option_layer(
            fence.map(|f| kube_lease_election::FenceLayer::new(f.clone())),
        ));
    Ok(builder.build())
}

/// A plain client of `agent` from a kubeconfig path (or the usual search), unfenced and
/// uncounted, for tools, tests and a walkthrough: its `User-Agent` says `(client)`.
///
/// # Errors
///
/// As [`config`] and [`build_for`].
pub async fn client(agent: Agent, kubeconfig: Option<&Path>) -> Result<Client, Error> {
    let (config, _) = config(kubeconfig).await?;
    build_for(agent, config, "client", &RestClientMetrics::default(), None, None)
}
