//! A resource request's query parameters, read once: the list options (selectors, paging,
//! versions), the watch's, the write options (`fieldManager`, `fieldValidation`, `force`,
//! `dryRun`), the delete options given in the URL, and the answer's shape negotiated from
//! `Accept`.

use std::time::Duration;

use super::negotiate::Render;
use crate::resource::ResourceDef;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::ApiError;
use crate::store::ListQuery;

/// The query parameters of a resource request.
#[derive(Debug, Default)]
pub(super) struct Query {
    pub(super) list: ListQuery,
    pub(super) watch: bool,
    pub(super) allow_bookmarks: bool,
    pub(super) send_initial_events: bool,
    pub(super) timeout: Option<Duration>,
    pub(super) field_manager: Option<String>,
    pub(super) field_validation: Option<String>,
    pub(super) force: bool,
    /// Whether `force` was given at all (upstream's `*bool`: only an apply may carry it).
    pub(super) force_given: bool,
    pub(super) propagation: Option<String>,
    pub(super) grace_period: Option<i64>,
    pub(super) dry_run: bool,
    /// Every `dryRun` given, for `ValidateDryRun`.
    pub(super) dry_run_values: Vec<String>,
    /// `Accept: ...;as=Table`: answer with server-side printed Tables.
    pub(super) as_table: bool,
    /// What the response is transformed into (`as=Table|PartialObjectMetadata[List]`).
    pub(super) render: Render,
    /// The encoding answers are written in.
    pub(super) wire: super::negotiate::Wire,
    /// `includeObject` of a Table (`TableOptions`): `None`, `Metadata` (the default), `Object`.
    pub(super) include_object: Option<String>,
}

impl Query {
    /// Reads the parameters of `q`, the selectors converted with `def`'s field labels.
    pub(super) fn parse(q: Option<&str>, def: &ResourceDef) -> Result<Query, ApiError> {
        let mut out = Query::default();
        for (k, v) in form_urlencoded::parse(q.unwrap_or("").as_bytes()) {
            let truthy = v == "true" || v == "1";
            match k.as_ref() {
                "labelSelector" => out.list.labels = LabelSelector::parse(&v)?,
                "fieldSelector" => {
                    out.list.fields =
                        FieldSelector::parse_converted(&v, def.field_labels, def.label_refusal())?;
                }
                "shardSelector" if !v.is_empty() => {
                    out.list.shard = Some(crate::shard::ShardSelector::parse(&v)?)
                }
                // An `int64`; zero or less is no limit (the storage pages only for `limit > 0`).
                "limit" => {
                    let limit: i64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!("invalid limit {v:?}: must be an integer"))
                    })?;
                    out.list.limit = usize::try_from(limit).unwrap_or(0);
                }
                "continue" => out.list.continue_token = Some(v.into_owned()),
                "resourceVersion" => out.list.resource_version = Some(v.into_owned()),
                "resourceVersionMatch" => out.list.resource_version_match = Some(v.into_owned()),
                "watch" => out.watch = truthy,
                "allowWatchBookmarks" => out.allow_bookmarks = truthy,
                "sendInitialEvents" => out.send_initial_events = truthy,
                "timeoutSeconds" => {
                    let secs: u64 = v.parse().map_err(|_| {
                        ApiError::bad_request(format!(
                            "strconv.ParseInt: parsing {}: invalid syntax",
                            crate::go_print::go_quote(&v)
                        ))
                    })?;
                    out.timeout = Some(Duration::from_secs(secs));
                }
                "fieldManager" => out.field_manager = Some(v.into_owned()),
                "fieldValidation" => out.field_validation = Some(v.into_owned()),
                "force" => {
                    out.force = truthy;
                    out.force_given = true;
                }
                "includeObject" => out.include_object = Some(v.into_owned()),
                "propagationPolicy" => out.propagation = Some(v.into_owned()),
                "gracePeriodSeconds" => out.grace_period = v.parse().ok(),
                // Judged with the verb's other options (`ValidateDryRun`).
                "dryRun" if !v.is_empty() => {
                    out.dry_run |= v == "All";
                    out.dry_run_values.push(v.into_owned());
                }
                _ => {}
            }
        }
        Ok(out)
    }

    /// A watch asking for its initial events (a streaming list), checked as the API server checks
    /// it (`ValidateListOptions`), or answered as a server without the feature would (see
    /// [`StreamingLists`](crate::StreamingLists)).
    pub(super) fn allow_streaming_list(&mut self, how: crate::StreamingLists) -> Result<(), ApiError> {
        let forbid = |field: &str, why: &str| {
            ApiError::invalid("meta.k8s.io", "ListOptions", "", &[(field.to_owned(), why.to_owned())])
        };
        match how {
            crate::StreamingLists::Ignored => {
                self.send_initial_events = false;
                Ok(())
            }
            crate::StreamingLists::Rejected => Err(forbid(
                "sendInitialEvents",
                "Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            )),
            crate::StreamingLists::Served if !self.allow_bookmarks => Err(forbid(
                "allowWatchBookmarks",
                "Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is set",
            )),
            crate::StreamingLists::Served
                if self.list.resource_version_match.as_deref() != Some("NotOlderThan") =>
            {
                Err(forbid(
                    "resourceVersionMatch",
                    "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ))
            }
            crate::StreamingLists::Served => Ok(()),
        }
    }
}
