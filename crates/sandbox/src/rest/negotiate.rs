//! Content negotiation (upstream's `endpoints/handlers/negotiation`): which shape the `Accept`
//! header asks an answer in — the object itself, a Table, or its metadata alone. [`transform`](super::transform)
//! turns an answer into that shape.

/// The shape a response is transformed into, from the `Accept` clause negotiated
/// (`endpoints/handlers/response.go`, `doTransformObject`): the object itself, a
/// `meta.k8s.io` Table, or `PartialObjectMetadata` / `PartialObjectMetadataList`, each in the
/// `meta.k8s.io` version the clause named (`v1` or `v1beta1`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) enum Render {
    #[default]
    Object,
    Table(&'static str),
    Partial(&'static str),
    PartialList(&'static str),
}

/// The encoding an answer is written in.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    #[default]
    Json,
    /// `application/vnd.kubernetes.protobuf`: a built-in kind, or any kind's metadata.
    Protobuf,
}

/// The first clause of `accept` the server can answer, as upstream's
/// `negotiation.NegotiateOutputMediaType` with the endpoint's transforms
/// (`AllowsMediaTypeTransform`): a served media type (or a wildcard) with no `as=`, or one
/// whose `as=` is a `meta.k8s.io/v1|v1beta1` Table (JSON or YAML) or `PartialObjectMetadata[List]`.
/// `None` when no clause can be served (406); an empty header is the object itself. Protobuf
/// is served for `built_in` kinds and for metadata; a Table is never protobuf, and a custom
/// resource's protobuf clause is passed over for the next, as its handler's serializers lack it.
/// A Table clause is passed over where the storage has no table convertor (`tables` false: a
/// review, a subresource that acts), as upstream's `AllowsMediaTypeTransform` allows it only
/// with one.
pub(super) fn negotiate(accept: &str, built_in: bool, tables: bool) -> Option<(Render, Wire)> {
    if accept.trim().is_empty() {
        return Some((Render::Object, Wire::Json));
    }
    accept.split(',').find_map(|clause| {
        let mut parts = clause.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let served = matches!(media.as_str(), "*/*" | "application/*")
            || crate::status::SERVED_MEDIA_TYPES.contains(&media.as_str());
        if !served {
            return None;
        }
        let (mut as_, mut g, mut v) = ("", "", "");
        for param in parts {
            match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", x)) => as_ = x,
                Some(("g", x)) => g = x,
                Some(("v", x)) => v = x,
                _ => {}
            }
        }
        let protobuf = media == crate::rest::protobuf::CONTENT_TYPE;
        let wire = if protobuf { Wire::Protobuf } else { Wire::Json };
        if as_.is_empty() {
            return (built_in || !protobuf).then_some((Render::Object, wire));
        }
        let version = match (g, v) {
            ("meta.k8s.io", "v1") => "meta.k8s.io/v1",
            ("meta.k8s.io", "v1beta1") => "meta.k8s.io/v1beta1",
            _ => return None,
        };
        let render = match as_ {
            "Table" if !protobuf && tables => Render::Table(version),
            "PartialObjectMetadata" => Render::Partial(version),
            "PartialObjectMetadataList" => Render::PartialList(version),
            _ => return None,
        };
        Some((render, wire))
    })
}
