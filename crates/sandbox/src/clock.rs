//! What the time is for the sandbox's containers: its simulated cluster's clock when it has
//! one, else the wall clock. The runtime stamps log lines with it and a container's `date`
//! reads it, so both agree with the timestamps the API writes.

use std::sync::Arc;

use jiff::Timestamp;

/// The sandbox's current time, as a shared function.
pub(crate) type Now = Arc<dyn Fn() -> Timestamp + Send + Sync>;
