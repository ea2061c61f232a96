//! What an elector needs to know: which Lease, who it is, and the three durations.

use std::time::Duration;

/// The Lease a set of candidates compete for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for LeaseRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// Leader-election settings, with kube-controller-manager's defaults.
///
/// ```
/// use std::time::Duration;
/// let config = kube_lease_election::ElectionConfig::new("default", "my-controller", "host-1_abc");
/// assert_eq!(config.lease_duration, Duration::from_secs(15));
/// assert!(config.validate().is_ok());
/// ```
#[derive(Debug, Clone)]
pub struct ElectionConfig {
    /// The Lease.
    pub lease: LeaseRef,
    /// This candidate's identity, written to `holderIdentity`; unique per process.
    pub identity: String,
    /// How long a follower waits, after it last saw the Lease change, before it takes the Lease.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it steps down; also how long after a
    /// renew was *sent* the leader's writes stay allowed (the fence).
    pub renew_deadline: Duration,
    /// How often candidates try to acquire, and the leader renews.
    pub retry_period: Duration,
}

/// Settings that cannot give a safe election.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// The durations are out of order.
    #[error(
        "leader-election durations must satisfy lease-duration > renew-deadline > retry-period > 0, \
         got lease-duration {lease:?}, renew-deadline {renew:?}, retry-period {retry:?}"
    )]
    Durations {
        /// `lease_duration`.
        lease: Duration,
        /// `renew_deadline`.
        renew: Duration,
        /// `retry_period`.
        retry: Duration,
    },
    /// The Lease stores its duration in whole seconds.
    #[error("leader-election lease-duration must be at least 1s (the Lease stores whole seconds), got {0:?}")]
    LeaseTooShort(Duration),
    /// No identity.
    #[error("leader-election identity must not be empty")]
    NoIdentity,
    /// No Lease name or namespace.
    #[error("leader-election Lease name and namespace must not be empty, got {0:?}")]
    NoLease(String),
}

impl ElectionConfig {
    /// Settings with kube-controller-manager's durations: lease 15 s, renew deadline 10 s, retry 2 s.
    #[must_use]
    pub fn new(namespace: &str, name: &str, identity: &str) -> Self {
        Self {
            lease: LeaseRef { namespace: namespace.to_owned(), name: name.to_owned() },
            identity: identity.to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// Checks `lease_duration > renew_deadline > retry_period > 0`, a lease of at least one
    /// second, and a non-empty identity and Lease.
    ///
    /// # Errors
    ///
    /// The first rule broken, naming the values.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let (lease, renew, retry) = (self.lease_duration, self.renew_deadline, self.retry_period);
        if !(lease > renew && renew > retry && retry > Duration::ZERO) {
            return Err(ConfigError::Durations { lease, renew, retry });
        }
        if lease < Duration::from_secs(1) {
            return Err(ConfigError::LeaseTooShort(lease));
        }
        if self.identity.is_empty() {
            return Err(ConfigError::NoIdentity);
        }
        if self.lease.name.is_empty() || self.lease.namespace.is_empty() {
            return Err(ConfigError::NoLease(self.lease.to_string()));
        }
        Ok(())
    }

    /// `leaseDurationSeconds` as written to the Lease: the duration rounded up to whole seconds.
    #[must_use]
    pub fn lease_duration_seconds(&self) -> i32 {
        let secs = self.lease_duration.as_secs() + u64::from(self.lease_duration.subsec_nanos() > 0);
        i32::try_from(secs).unwrap_or(i32::MAX)
    }
}

/// A new identity in client-go's form, `<hostname>_<random UUID>`: unique per process even when
/// two replicas share a hostname.
#[must_use]
pub fn new_identity() -> String {
    format!("{}_{}", hostname(), random_uuid())
}

/// The host's name: `$HOSTNAME` (a pod's name in a cluster), else the kernel's, else `unknown`.
#[must_use]
pub fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// A version-4 UUID in its usual text form.
fn random_uuid() -> String {
    let mut b: [u8; 16] = fastrand::u128(..).to_le_bytes();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!("{}-{}-{}-{}-{}", &hex[..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(lease: u64, renew: u64, retry: u64) -> ElectionConfig {
        ElectionConfig {
            lease_duration: Duration::from_millis(lease),
            renew_deadline: Duration::from_millis(renew),
            retry_period: Duration::from_millis(retry),
            ..ElectionConfig::new("ns", "lease", "me")
        }
    }

    #[test]
    fn durations_must_be_ordered() {
        assert!(with(15_000, 10_000, 2_000).validate().is_ok());
        for (l, r, t) in
            [(10_000, 10_000, 2_000), (15_000, 2_000, 2_000), (15_000, 10_000, 0), (5_000, 10_000, 2_000)]
        {
            let e = with(l, r, t).validate().unwrap_err();
            assert!(matches!(e, ConfigError::Durations { .. }), "{e}");
            assert!(e.to_string().contains("lease-duration > renew-deadline > retry-period > 0"), "{e}");
        }
        assert_eq!(
            with(900, 500, 100).validate(),
            Err(ConfigError::LeaseTooShort(Duration::from_millis(900)))
        );
    }

    #[test]
    fn identity_and_lease_are_required() {
        let mut c = with(15_000, 10_000, 2_000);
        c.identity.clear();
        assert_eq!(c.validate(), Err(ConfigError::NoIdentity));
        let mut c = with(15_000, 10_000, 2_000);
        c.lease.name.clear();
        assert!(matches!(c.validate(), Err(ConfigError::NoLease(_))));
    }

    #[test]
    fn lease_seconds_round_up() {
        assert_eq!(with(15_000, 1, 0).lease_duration_seconds(), 15);
        assert_eq!(with(1_500, 1, 0).lease_duration_seconds(), 2);
    }

    #[test]
    fn identities_are_unique_and_shaped_like_client_gos() {
        let (a, b) = (new_identity(), new_identity());
        assert_ne!(a, b);
        let (host, uuid) = a.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert_eq!(uuid.len(), 36);
        assert_eq!(uuid.as_bytes()[14], b'4');
    }
}
