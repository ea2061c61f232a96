//! The pure part of an election round: from what the Lease says and how long ago it last changed
//! (by this candidate's own clock), decide whether to create it, take it, renew it, or follow.
//!
//! Remote timestamps are never compared with the local clock (client-go's rule): a Lease is
//! expired when `leaseDurationSeconds` have passed on *our* monotonic clock since we last saw its
//! record change. That tolerates any clock skew between machines, though not a clock running at a
//! different rate.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::LeaseSpec;

/// The fields of a Lease that leader election reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Record {
    /// `holderIdentity`; empty or absent when nobody holds it.
    pub holder: Option<String>,
    /// `leaseDurationSeconds` as written by the holder.
    pub duration_seconds: Option<i32>,
    /// `renewTime`, as written (never compared with our clock).
    pub renew_time: Option<String>,
    /// `acquireTime`, as written.
    pub acquire_time: Option<String>,
    /// `leaseTransitions`.
    pub transitions: Option<i32>,
}

impl Record {
    /// Reads the record from a Lease's spec (a Lease without a spec has an empty record).
    #[must_use]
    pub fn from_spec(spec: Option<&LeaseSpec>) -> Self {
        let Some(s) = spec else { return Self::default() };
        let time = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime>| {
            t.as_ref().map(|t| t.0.to_string())
        };
        Self {
            holder: s.holder_identity.clone(),
            duration_seconds: s.lease_duration_seconds,
            renew_time: time(&s.renew_time),
            acquire_time: time(&s.acquire_time),
            transitions: s.lease_transitions,
        }
    }

    /// The holder, if the Lease is held by anyone.
    #[must_use]
    pub fn holder(&self) -> Option<&str> {
        self.holder.as_deref().filter(|h| !h.is_empty())
    }

    /// What is wrong with the record, for a log line; empty when nothing is. A record with
    /// garbage is still read conservatively (see [`decide`]), never overwritten early.
    #[must_use]
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.holder().is_some() {
            match self.duration_seconds {
                None => out.push("leaseDurationSeconds is missing".to_owned()),
                Some(d) if d <= 0 => out.push(format!("leaseDurationSeconds is {d}, not positive")),
                Some(_) => {}
            }
            if self.renew_time.is_none() {
                out.push("renewTime is missing".to_owned());
            }
        }
        if let Some(t) = self.transitions.filter(|t| *t < 0) {
            out.push(format!("leaseTransitions is {t}, negative"));
        }
        out
    }

    /// How long the holder's claim lasts: its `leaseDurationSeconds`, or `fallback` (our own lease
    /// duration) when that is missing or not positive — garbage never shortens the wait.
    #[must_use]
    pub fn claim(&self, fallback: Duration) -> Duration {
        match self.duration_seconds {
            Some(d) if d > 0 => Duration::from_secs(d.unsigned_abs().into()),
            _ => fallback,
        }
    }
}

/// What one election round should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// There is no Lease: create it, naming us.
    Create,
    /// Write us as the holder over the version just read (optimistic concurrency: a 409 means
    /// someone else got there first).
    Take {
        /// `leaseTransitions` to write: unchanged when we already held it, one more otherwise.
        transitions: i32,
        /// Whether we already held it (a renew keeps `acquireTime`).
        renew: bool,
    },
    /// Someone else holds it and, by our clock, their claim has not run out.
    Follow {
        /// The holder.
        holder: String,
        /// How long until the claim runs out if the record does not change again.
        expires_in: Duration,
    },
}

/// Decides one round. `since_change` is how long ago, on our monotonic clock, we first saw the
/// Lease's current record; `own_duration` is our lease duration, used when the record's is garbage.
///
/// ```
/// use std::time::Duration;
/// use kube_lease_election::decide::{decide, Decision, Record};
/// let held = Record { holder: Some("other".into()), duration_seconds: Some(15), ..Record::default() };
/// let d = decide(Some(&held), "me", Duration::from_secs(3), Duration::from_secs(15));
/// assert_eq!(d, Decision::Follow { holder: "other".into(), expires_in: Duration::from_secs(12) });
/// let d = decide(Some(&held), "me", Duration::from_secs(16), Duration::from_secs(15));
/// assert_eq!(d, Decision::Take { transitions: 1, renew: false });
/// ```
#[must_use]
pub fn decide(lease: Option<&Record>, me: &str, since_change: Duration, own_duration: Duration) -> Decision {
    let Some(record) = lease else { return Decision::Create };
    let transitions = record.transitions.unwrap_or(0).max(0);
    match record.holder() {
        Some(holder) if holder == me => Decision::Take { transitions, renew: true },
        Some(holder) => {
            let claim = record.claim(own_duration);
            if since_change < claim {
                Decision::Follow { holder: holder.to_owned(), expires_in: claim - since_change }
            } else {
                Decision::Take { transitions: transitions.saturating_add(1), renew: false }
            }
        }
        None => Decision::Take { transitions: transitions.saturating_add(1), renew: false },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S15: Duration = Duration::from_secs(15);

    fn held(by: &str, secs: Option<i32>, transitions: Option<i32>) -> Record {
        Record {
            holder: Some(by.into()),
            duration_seconds: secs,
            renew_time: Some("2026-01-01T00:00:00Z".into()),
            transitions,
            ..Record::default()
        }
    }

    #[test]
    fn absent_is_created() {
        assert_eq!(decide(None, "me", Duration::ZERO, S15), Decision::Create);
    }

    #[test]
    fn ours_is_renewed_without_a_transition() {
        let d = decide(Some(&held("me", Some(15), Some(4))), "me", Duration::from_secs(100), S15);
        assert_eq!(d, Decision::Take { transitions: 4, renew: true });
    }

    #[test]
    fn someone_elses_live_lease_is_followed_until_it_runs_out_on_our_clock() {
        let r = held("other", Some(15), Some(2));
        assert_eq!(
            decide(Some(&r), "me", Duration::from_secs(14), S15),
            Decision::Follow { holder: "other".into(), expires_in: Duration::from_secs(1) }
        );
        assert_eq!(
            decide(Some(&r), "me", Duration::from_secs(15), S15),
            Decision::Take { transitions: 3, renew: false }
        );
    }

    #[test]
    fn a_released_lease_is_taken_at_once() {
        let mut r = held("", Some(1), Some(7));
        r.holder = Some(String::new());
        assert_eq!(
            decide(Some(&r), "me", Duration::ZERO, S15),
            Decision::Take { transitions: 8, renew: false }
        );
        r.holder = None;
        assert_eq!(
            decide(Some(&r), "me", Duration::ZERO, S15),
            Decision::Take { transitions: 8, renew: false }
        );
    }

    #[test]
    fn garbage_durations_wait_our_own_lease_duration() {
        for bad in [None, Some(0), Some(-5)] {
            let r = held("other", bad, None);
            assert!(!r.problems().is_empty());
            assert_eq!(
                decide(Some(&r), "me", Duration::from_secs(10), S15),
                Decision::Follow { holder: "other".into(), expires_in: Duration::from_secs(5) },
                "{bad:?}"
            );
            assert_eq!(
                decide(Some(&r), "me", S15, S15),
                Decision::Take { transitions: 1, renew: false },
                "{bad:?}"
            );
        }
    }

    #[test]
    fn problems_name_the_field() {
        let mut r = held("other", Some(-5), Some(-1));
        r.renew_time = None;
        let p = r.problems().join("; ");
        assert!(p.contains("leaseDurationSeconds is -5"), "{p}");
        assert!(p.contains("renewTime is missing"), "{p}");
        assert!(p.contains("leaseTransitions is -1"), "{p}");
        assert_eq!(decide(Some(&r), "me", S15, S15), Decision::Take { transitions: 1, renew: false });
        assert!(held("other", Some(15), Some(0)).problems().is_empty());
    }
}
