//! Whether the API server serves streaming lists (`sendInitialEvents`, Kubernetes 1.27+): the
//! initial state as a watch's ADDED events, ended by a BOOKMARK annotated
//! `k8s.io/initial-events-end`, instead of pages of a list.
//!
//! kube-runtime's watcher, asked for streaming lists, cannot fall back: a server that rejects the
//! request fails every attempt (retried with backoff for ever), and one that ignores
//! `sendInitialEvents` streams the objects but never the end bookmark, so the first list never
//! ends. So the informer asks first, with a streaming list that selects nothing (a field
//! selector on a name no object can have: object names are lower case): a server that serves them
//! answers at once with the end bookmark. Only that bookmark counts as yes; a rejection of the
//! request (400, 422: an older server, or the WatchList feature turned off) or a stream without
//! the bookmark within [`PROBE_TIMEOUT`] counts as no, and the lists are paginated — always
//! correct, only slower. An answer that says nothing of the feature (the server unreachable, 401,
//! 403, 429, 5xx) decides nothing: that list is paginated and the next one asks again.

use std::time::Duration;

use futures::StreamExt;
use kube::Api;
use kube::api::{WatchEvent, WatchParams};

use crate::informer::Watchable;

/// How long a server that accepted the probe has to send the end bookmark.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// A field selector no object matches (names are lower-case DNS labels or subdomains).
const NO_OBJECT: &str = "metadata.name=informer.STREAMING-LIST-PROBE";

/// The annotation of the BOOKMARK that ends a streaming list's initial events.
pub const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether the server behind `api` serves streaming lists: `Some(answer)`, or `None` when its
/// answer said nothing about it (ask again later).
pub async fn serves_streaming_lists<K: Watchable>(api: &Api<K>) -> Option<bool> {
    let params = WatchParams::streaming_lists()
        .fields(NO_OBJECT)
        // Bounded by the server too, so a stream it never ends is not left open.
        .timeout(u32::try_from(PROBE_TIMEOUT.as_secs()).unwrap_or(5));
    // "0", as kube-runtime's watcher sends with a streaming list: the probe is the same request.
    let mut stream = match api.watch(&params, "0").await {
        Ok(s) => s.boxed(),
        Err(kube::Error::Api(s)) if matches!(s.code, 400 | 422) => return Some(false),
        Err(_) => return None,
    };
    let answer = tokio::time::timeout(PROBE_TIMEOUT * 2, async {
        while let Some(event) = stream.next().await {
            match event {
                Ok(WatchEvent::Bookmark(b)) if b.metadata.annotations.contains_key(INITIAL_EVENTS_END) => {
                    return Some(true);
                }
                // Objects (none should match), or a periodic bookmark: not yet an answer.
                Ok(WatchEvent::Bookmark(_) | WatchEvent::Added(_) | WatchEvent::Modified(_)) => {}
                Ok(WatchEvent::Error(e)) if matches!(e.code, 400 | 422) => return Some(false),
                Ok(WatchEvent::Deleted(_) | WatchEvent::Error(_)) | Err(_) => return None,
            }
        }
        // The server ended the stream without the end bookmark: it ignored sendInitialEvents.
        Some(false)
    })
    .await;
    // Accepted, but no end bookmark in time: it ignored sendInitialEvents.
    answer.unwrap_or(Some(false))
}
