//! The flags every controller's `run` shares, and their checks: the client, the scope, the
//! workers, resync, logs, the operations endpoint, Events, leader election and sharding.
//!
//! A binary flattens [`RunArgs`] into its own `run` command and names its Lease and its ring
//! (`--leader-elect-resource-name` and `--sharding-ring` have no default here, so they are
//! required until a binary gives one with clap's `mut_arg`, as below).
//!
//! ```
//! use clap::{Args, Parser};
//! use kube_manager::flags::RunArgs;
//!
//! #[derive(Parser)]
//! #[command(
//!     mut_arg("leader_elect_resource_name", |a| a.default_value("my-controller").required(false)),
//!     mut_arg("sharding_ring", |a| a.default_value("my-controller").required(false))
//! )]
//! struct Cli {
//!     #[command(flatten)]
//!     run: RunArgs,
//! }
//!
//! let cli = Cli::parse_from(["my-controller", "--workers", "4", "--leader-elect"]);
//! assert_eq!(cli.run.workers, 4);
//! assert_eq!(cli.run.election.leader_elect_resource_name, "my-controller");
//! ```

use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Args, ValueEnum};
use kube_lease_election::{ElectionConfig, LeaseRef};

use crate::Error;
use crate::events::EventsMode;
use crate::logging::LogFormat;
use crate::options::Scope;

/// Flags of `run`.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Kubeconfig file; else $KUBECONFIG (empty counts as unset), ~/.kube/config, or the
    /// in-cluster service account.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// Namespace to watch.
    #[arg(long, short = 'n', default_value = "default", conflicts_with = "all_namespaces")]
    pub namespace: String,
    /// Watch every namespace.
    #[arg(long, short = 'A')]
    pub all_namespaces: bool,
    /// Concurrent reconciles (at least 1).
    #[arg(long, default_value_t = 2, value_parser = parse_workers)]
    pub workers: usize,
    /// Informer resync period, e.g. 30s, 5m, 1h; 0 disables it.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub resync: Duration,
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Human)]
    pub log_format: LogFormat,
    /// Serve /metrics, /healthz and /readyz on this address (e.g. 0.0.0.0:8080 or :8080); off by
    /// default.
    #[arg(long, value_name = "ADDR", value_parser = parse_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// Which Events to publish: all, warnings (for big clusters), none. Either way they are
    /// aggregated, rate-limited per object and within a process-wide budget.
    #[arg(long, value_enum, default_value_t = EventsMode::All)]
    pub events: EventsMode,
    /// Leader election.
    #[command(flatten)]
    pub election: ElectionArgs,
}

/// Leader-election flags, named as kube-controller-manager names them.
#[derive(Debug, Args, Clone)]
pub struct ElectionArgs {
    /// Run as one candidate of a leader election: only the leader reconciles.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = ArgAction::Set)]
    pub leader_elect: bool,
    /// How long followers wait after the Lease last changed before taking it.
    #[arg(long, default_value = "15s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_lease_duration: Duration,
    /// How long the leader tries to renew before it steps down (and stops writing).
    #[arg(long, default_value = "10s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews.
    #[arg(long, default_value = "2s", value_parser = parse_duration, value_name = "DURATION")]
    pub leader_elect_retry_period: Duration,
    /// The Lease's name.
    #[arg(long, value_name = "NAME")]
    pub leader_elect_resource_name: String,
    /// The Lease's namespace; default: the watched namespace, or with --all-namespaces the pod's
    /// own namespace (from the service account mount).
    #[arg(long, value_name = "NS")]
    pub leader_elect_resource_namespace: Option<String>,
    /// Share the keys among every running replica (each holds its own shard Lease, with the
    /// leader-election durations and namespace) instead of electing one leader.
    #[arg(long, num_args = 0..=1, default_value_t = false, default_missing_value = "true", action = ArgAction::Set, conflicts_with = "leader_elect")]
    pub sharding: bool,
    /// The ring's name: replicas with the same name share the keys.
    #[arg(long, value_name = "NAME")]
    pub sharding_ring: String,
    /// What the ring hashes: `name` (each object of the controller's kind on its own: the even
    /// spread) or `namespace`
    /// (a whole namespace per replica, so an API server with sharded list and watch, KEP-5866,
    /// sends each replica only its share). Every replica of a ring must use the same.
    #[arg(long, value_enum, default_value_t = ShardKey::Name, value_name = "KEY")]
    pub sharding_key: ShardKey,
}

/// `--sharding-key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShardKey {
    /// `namespace/name`.
    Name,
    /// The namespace.
    Namespace,
}

impl From<ShardKey> for kube_lease_election::ring::Keying {
    fn from(k: ShardKey) -> Self {
        match k {
            ShardKey::Name => Self::Name,
            ShardKey::Namespace => Self::Namespace,
        }
    }
}

/// Where a pod's own namespace is mounted.
pub const POD_NAMESPACE_FILE: &str = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";

impl ElectionArgs {
    /// The election settings for `identity` watching `scope`, checked; `None` without
    /// `--leader-elect`.
    ///
    /// # Errors
    ///
    /// Durations out of order, or no namespace for the Lease.
    pub fn config(&self, scope: &Scope, identity: &str) -> Result<Option<ElectionConfig>, Error> {
        if !self.leader_elect && !self.sharding {
            return Ok(None);
        }
        let namespace = match (&self.leader_elect_resource_namespace, scope) {
            (Some(ns), _) => ns.clone(),
            (None, Scope::Namespace(ns)) => ns.clone(),
            (None, Scope::All) => std::fs::read_to_string(POD_NAMESPACE_FILE)
                .map(|s| s.trim().to_owned())
                .ok()
                .filter(|s| !s.is_empty())
                .ok_or(Error::NoLeaseNamespace)?,
        };
        let config = ElectionConfig {
            lease: LeaseRef { namespace, name: self.leader_elect_resource_name.clone() },
            identity: identity.to_owned(),
            lease_duration: self.leader_elect_lease_duration,
            renew_deadline: self.leader_elect_renew_deadline,
            retry_period: self.leader_elect_retry_period,
        };
        config.validate().map_err(Error::Election)?;
        Ok(Some(config))
    }
}

/// Parses `HOST:PORT`, or `:PORT` for every interface (as Go programs accept).
///
/// # Errors
///
/// Not an address, worded for the user.
pub fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let full = if s.starts_with(':') { format!("0.0.0.0{s}") } else { s.to_owned() };
    full.parse().map_err(|_| format!("{s:?} is not an address (use e.g. :8080 or 127.0.0.1:8080)"))
}

/// Parses a worker count: a whole number, at least 1.
///
/// # Errors
///
/// Zero or not a number, worded for the user.
pub fn parse_workers(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("must be at least 1 (0 workers would never reconcile anything)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number")),
    }
}

/// Parses `500ms`, `30s`, `5m`, `1h`, `1h30m`, or `0`.
///
/// # Errors
///
/// A message naming the value when it is not a duration.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("{s:?} is not a duration (use e.g. 30s, 5m, 1h30m, or 0 to disable)");
    if s.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let mut total = Duration::ZERO;
    let mut rest = s.trim();
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.saturating_mul(60)),
            "h" => Duration::from_secs(n.saturating_mul(3600)),
            _ => return Err(bad()),
        };
        total = total.saturating_add(unit);
        rest = &rest[unit_len..];
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        for bad in ["", "30", "s", "3x", "-5s", "1.5s", "forever"] {
            let e = parse_duration(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
    }

    #[test]
    fn workers() {
        assert!(parse_workers("0").unwrap_err().contains("at least 1"));
        assert!(parse_workers("two").is_err());
        assert_eq!(parse_workers("4"), Ok(4));
    }
}
