//! The sandbox's clock: wall-clock time that a test can pause and move forward.
//!
//! Everything the simulated cluster waits for — a pod's readiness delay, a Job pod's run time,
//! a CronJob's schedule, a node lease's renewal, a NoExecute toleration running out — is due at a
//! time on this clock, and the timestamps the simulation writes (`startTime`,
//! `lastScheduleTime`, condition transition times) are read from it. Paused, it stands still;
//! [`Clock::advance`] moves it and wakes the simulation at once, so a test of a five-minute
//! schedule takes milliseconds. Its containers live on it too: their log lines are stamped with
//! it, `date` reads it and `sleep` waits on it ([`Clock::sleep`]). A sandbox without a simulated
//! cluster has one that is never paused: the wall clock.

use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use parking_lot::Mutex;
use tokio::sync::Notify;

/// A clock a test can pause and advance; clones share it.
///
/// ```
/// use std::time::Duration;
/// let clock = kube_sandbox::Clock::default();
/// clock.pause();
/// let before = clock.now();
/// clock.advance(Duration::from_secs(3600));
/// assert_eq!(clock.now().duration_since(before).as_secs(), 3600);
/// ```
#[derive(Clone, Default)]
pub struct Clock {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    state: Mutex<State>,
    moved: Notify,
}

#[derive(Default)]
struct State {
    /// Where the clock stands while paused.
    frozen: Option<Timestamp>,
    /// How far ahead of the wall clock it runs (what `advance` added while running).
    ahead: SignedDuration,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Clock").field("now", &self.now()).field("paused", &self.is_paused()).finish()
    }
}

impl Clock {
    /// The time now on this clock.
    #[must_use]
    pub fn now(&self) -> Timestamp {
        let st = self.inner.state.lock();
        st.frozen.unwrap_or_else(|| Timestamp::now().saturating_add(st.ahead).unwrap_or(Timestamp::MAX))
    }

    /// [`now`](Self::now) as `metav1.Time` writes it: RFC 3339, the fraction of a second cut
    /// off (never rounded up into the future).
    #[must_use]
    pub fn rfc3339(&self) -> String {
        seconds(self.now())
    }

    /// A clock paused at `at`.
    #[must_use]
    pub fn paused_at(at: Timestamp) -> Self {
        let clock = Self::default();
        clock.inner.state.lock().frozen = Some(at);
        clock
    }

    /// Stops the clock where it stands.
    pub fn pause(&self) {
        let now = self.now();
        self.inner.state.lock().frozen.get_or_insert(now);
    }

    /// Lets a paused clock run again from where it stands.
    pub fn resume(&self) {
        let mut st = self.inner.state.lock();
        if let Some(at) = st.frozen.take() {
            st.ahead = at.duration_since(Timestamp::now());
        }
    }

    /// Whether the clock is paused.
    #[must_use]
    pub fn is_paused(&self) -> bool {
        self.inner.state.lock().frozen.is_some()
    }

    /// Moves the clock forward by `by` (paused or not) and wakes the simulation to act on what
    /// fell due.
    pub fn advance(&self, by: Duration) {
        let by = SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX);
        {
            let mut st = self.inner.state.lock();
            match &mut st.frozen {
                Some(at) => *at = at.saturating_add(by).unwrap_or(Timestamp::MAX),
                None => st.ahead = st.ahead.saturating_add(by),
            }
        }
        self.inner.moved.notify_waiters();
    }

    /// Resolves when [`advance`](Self::advance) is next called after this call.
    pub(crate) fn moved(&self) -> tokio::sync::futures::Notified<'_> {
        self.inner.moved.notified()
    }

    /// Waits until `by` has passed on this clock: on a running clock as on the wall clock (less
    /// what an advance skips), on a paused one until advances add up to it.
    pub(crate) async fn sleep(&self, by: Duration) {
        let Some(until) =
            self.now().checked_add(SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX)).ok()
        else {
            return std::future::pending().await;
        };
        loop {
            let moved = self.moved();
            let left = until.duration_since(self.now());
            if left <= SignedDuration::ZERO {
                return;
            }
            // A paused clock moves only by advances; a running one also with the wall clock.
            let tick = if self.is_paused() {
                Duration::from_secs(1)
            } else {
                Duration::try_from(left).unwrap_or(Duration::from_secs(1))
            };
            tokio::select! {
                () = moved => {}
                () = tokio::time::sleep(tick) => {}
            }
        }
    }
}

/// `t` in whole seconds, as `metav1.Time` holds it.
pub(crate) fn seconds(t: Timestamp) -> String {
    crate::object_meta::rfc3339(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paused_clock_stands_still_until_advanced() {
        let clock = Clock::default();
        clock.pause();
        let at = clock.now();
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(clock.now(), at);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now().duration_since(at), SignedDuration::from_secs(90));
    }

    #[tokio::test]
    async fn a_sleep_on_a_paused_clock_ends_when_advances_add_up_to_it() {
        let clock = Clock::default();
        clock.pause();
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move { clock.sleep(Duration::from_secs(30)).await }
        });
        tokio::task::yield_now().await;
        clock.advance(Duration::from_secs(20));
        tokio::task::yield_now().await;
        assert!(!sleeper.is_finished());
        clock.advance(Duration::from_secs(10));
        sleeper.await.unwrap();
    }

    #[test]
    fn a_resumed_clock_keeps_what_it_was_advanced_by() {
        let clock = Clock::default();
        clock.pause();
        clock.advance(Duration::from_secs(600));
        clock.resume();
        let ahead = clock.now().duration_since(Timestamp::now());
        assert!(ahead >= SignedDuration::from_secs(599), "{ahead:?}");
        assert!(!clock.is_paused());
    }
}
