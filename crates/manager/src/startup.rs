//! What `run` sets up around a controller, for any controller built from these parts: the
//! client configuration, the metrics registry (REST client and process metrics), the membership
//! (alone, leader-elected or sharded, its elector on an unfenced client of its own) and the
//! controller's client (fenced, with the shard selector); then, once the controller is built,
//! the metrics and probes server and the coordinated run until a signal.
//!
//! A controller's `run` reads: [`Startup::connect`], its own preflight check and constructor,
//! [`Startup::serve_and_run`].

use std::sync::Arc;

use kube::Client;
use kube_coordination::{Coordination, Membership};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::Error;
use crate::client::{self, Agent, Source};
use crate::events::EventConfig;
use crate::flags::RunArgs;
use crate::metrics::RestClientMetrics;
use crate::ops::{self, Probes};
use crate::options::{Options, Scope};
use crate::process::ProcessMetrics;

/// A replica connected and placed (alone, elected or a shard member), its controller not yet
/// built.
pub struct Startup {
    /// Where the controller works (`--namespace` or `--all-namespaces`).
    pub scope: Scope,
    /// This replica's identity: its Lease holder name and the tail of its `User-Agent`.
    pub identity: String,
    /// The registry the controller registers its metrics into; served at `/metrics`.
    pub registry: Registry,
    /// The controller's client: its writes go through the membership's fence, and with sharding
    /// by namespace its lists and watches carry the shard selector.
    pub client: Client,
    membership: Membership,
}

impl Startup {
    /// Reads the client configuration and the election flags, and builds the membership and the
    /// clients, for `agent`.
    ///
    /// # Errors
    ///
    /// A missing or unreadable kubeconfig, election durations out of order, a bad ring name.
    pub async fn connect(args: &RunArgs, agent: Agent) -> Result<Self, Error> {
        let scope = if args.all_namespaces { Scope::All } else { Scope::Namespace(args.namespace.clone()) };
        let identity = kube_lease_election::new_identity();
        let election_config = args.election.config(&scope, &identity)?;
        let (config, source) = client::config(args.kubeconfig.as_deref()).await?;
        match &source {
            Source::Kubeconfig(paths) => {
                tracing::info!(%identity, kubeconfig = ?paths, server = %config.cluster_url, "connecting");
            }
            Source::InCluster => {
                tracing::info!(%identity, server = %config.cluster_url, "connecting with the in-cluster service account");
            }
        }
        let mut registry = Registry::default();
        let rest = RestClientMetrics::register(&mut registry);
        ProcessMetrics::register(&mut registry);
        // The elector (or shard member) talks through its own, unfenced client: it must write
        // while acquiring.
        let membership = match election_config {
            None => Membership::Alone,
            Some(c) => {
                let lease_client = client::build_for(agent, config.clone(), &identity, &rest, None, None)?;
                if args.election.sharding {
                    let (ring, key) = (&args.election.sharding_ring, args.election.sharding_key);
                    tracing::info!(%ring, %identity, ?key, "sharding: a member of the ring");
                    Membership::sharded(lease_client, ring, key.into(), c).map_err(Error::Election)?
                } else {
                    Membership::elected(lease_client, c, &mut registry).map_err(Error::Election)?
                }
            }
        };
        let client = client::build_for(
            agent,
            config,
            &identity,
            &rest,
            membership.fence().as_ref(),
            membership.selector(),
        )?;
        Ok(Self { scope, identity, registry, client, membership })
    }

    /// The controller's options from the flags: this scope and identity, `--workers`,
    /// `--resync`, `--events`.
    #[must_use]
    pub fn options(&self, args: &RunArgs) -> Options {
        Options {
            scope: self.scope.clone(),
            workers: args.workers,
            resync: args.resync,
            identity: self.identity.clone(),
            events: EventConfig { mode: args.events, ..EventConfig::default() },
        }
    }

    /// Serves `/metrics`, `/healthz` and `/readyz` on `metrics_addr` (ready once `has_synced`),
    /// then runs `work` under the membership until it returns; the Lease goes (released, or the
    /// shard Lease deleted) only after it has.
    ///
    /// # Errors
    ///
    /// The metrics address cannot be bound.
    pub async fn serve_and_run<F, Fut>(
        self,
        metrics_addr: Option<std::net::SocketAddr>,
        has_synced: impl Fn() -> bool + Send + Sync + 'static,
        work: F,
    ) -> Result<(), Error>
    where
        F: FnOnce(Coordination) -> Fut,
        Fut: Future,
    {
        let stop = CancellationToken::new();
        if let Some(addr) = metrics_addr {
            let probes = Probes::of_controller(has_synced, self.membership.election());
            let bound = ops::serve(addr, Arc::new(self.registry), probes, stop.clone())
                .await
                .map_err(|source| Error::ServeMetrics { addr, source })?;
            tracing::info!(%bound, "serving /metrics, /healthz and /readyz");
        }
        self.membership.run(work).await;
        stop.cancel();
        Ok(())
    }
}
