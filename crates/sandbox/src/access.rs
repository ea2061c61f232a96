//! What a request asks, as the authorizer sees it: upstream's `RequestInfoFactory`, read from the
//! method, the path and the query alone — before the path is known to name a resource, so a
//! refused client learns nothing of what the server serves.

use http::Method;

use crate::user::UserInfo;

/// The attributes of one request (`authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`,
    /// `impersonate`…; a non-resource request's lowercased HTTP method.
    pub verb: String,
    /// Whether the path names a resource (`/api/v1/...`, `/apis/<group>/<version>/...`).
    pub resource_request: bool,
    /// The API group (empty for the core group).
    pub group: String,
    /// The API version.
    pub version: String,
    /// The resource, e.g. `pods`.
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The namespace (empty for a cluster-scoped request).
    pub namespace: String,
    /// The object's name (empty for a collection).
    pub name: String,
    /// The request path (what a non-resource rule matches).
    pub path: String,
}

impl Attributes {
    /// The attributes of a request of `method` to `path` with `query`, made by `user`.
    #[must_use]
    pub fn of(user: UserInfo, method: &Method, path: &str, query: Option<&str>) -> Self {
        let verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        };
        let mut attrs = Self {
            user,
            verb: method.as_str().to_ascii_lowercase(),
            path: path.to_owned(),
            ..Self::default()
        };
        let parts: Vec<&str> = path.trim_matches('/').split('/').filter(|p| !p.is_empty()).collect();
        let mut rest: &[&str] = match parts.as_slice() {
            ["api", version, rest @ ..] if !rest.is_empty() => {
                attrs.version = (*version).to_owned();
                rest
            }
            ["apis", group, version, rest @ ..] if !rest.is_empty() => {
                attrs.group = (*group).to_owned();
                attrs.version = (*version).to_owned();
                rest
            }
            _ => return attrs,
        };
        attrs.resource_request = true;
        // `/api/v1/watch/pods`, `/api/v1/proxy/...`: the verb in the path (deprecated forms).
        if matches!(rest[0], "watch" | "proxy") {
            if rest.len() < 2 {
                attrs.verb = String::new();
                return attrs;
            }
            attrs.verb = rest[0].to_owned();
            rest = &rest[1..];
        } else {
            verb.clone_into(&mut attrs.verb);
        }
        // `namespaces/<ns>/<resource>/...`; `namespaces/<ns>` and its `status` and `finalize`
        // are the namespace object itself, in its own namespace.
        if rest[0] == "namespaces"
            && let Some(ns) = rest.get(1)
        {
            attrs.namespace = (*ns).to_owned();
            if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
                rest = &rest[2..];
            }
        }
        attrs.resource = rest[0].to_owned();
        if let Some(name) = rest.get(1) {
            attrs.name = (*name).to_owned();
        }
        if attrs.verb != "proxy"
            && let Some(sub) = rest.get(2)
        {
            attrs.subresource = (*sub).to_owned();
        }
        if attrs.name.is_empty() && attrs.verb == "get" {
            let (watch, name) = list_query(query);
            attrs.verb = if watch { "watch" } else { "list" }.to_owned();
            // A list of one object by `metadata.name=` may be granted by a rule on its name.
            if let Some(name) = name {
                attrs.name = name;
            }
        }
        if attrs.name.is_empty() && attrs.verb == "delete" {
            attrs.verb = "deletecollection".to_owned();
        }
        attrs
    }

    /// The resource and subresource as a rule names them: `pods`, `pods/log`.
    #[must_use]
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }
}

/// A list's `watch` and the name its field selector requires exactly (`metadata.name=x` or `==`),
/// when that name is a valid path segment.
fn list_query(query: Option<&str>) -> (bool, Option<String>) {
    let (mut watch, mut name) = (false, None);
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match &*key {
            // Go's `strconv.ParseBool`.
            "watch" => watch = matches!(&*value, "1" | "t" | "T" | "true" | "TRUE" | "True"),
            "fieldSelector" => {
                let terms: Vec<&str> = value.split(',').collect();
                name = terms.iter().find_map(|t| {
                    let (k, v) = t.split_once("==").or_else(|| t.split_once('='))?;
                    (k.trim() == "metadata.name" && !v.starts_with('=')).then(|| v.trim().to_owned())
                });
                name = name.filter(|n| !n.is_empty() && n != "." && n != ".." && !n.contains(['/', '%']));
            }
            _ => {}
        }
    }
    (watch, name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(method: Method, path: &str, query: Option<&str>) -> Attributes {
        Attributes::of(UserInfo::default(), &method, path, query)
    }

    #[test]
    fn paths_read_as_upstreams_request_info() {
        let a = of(Method::GET, "/api/v1/namespaces/default/pods", None);
        assert_eq!((a.verb.as_str(), a.namespace.as_str(), a.resource.as_str()), ("list", "default", "pods"));
        let a = of(Method::GET, "/apis/apps/v1/namespaces/default/deployments", Some("watch=1"));
        assert_eq!((a.verb.as_str(), a.group.as_str()), ("watch", "apps"));
        let a = of(Method::POST, "/api/v1/namespaces/default/pods/web/exec", None);
        assert_eq!((a.verb.as_str(), a.name.as_str(), a.subresource.as_str()), ("create", "web", "exec"));
        assert_eq!(a.combined_resource(), "pods/exec");
        // The namespace object is in its own namespace; its status is its subresource.
        let a = of(Method::PUT, "/api/v1/namespaces/shop/status", None);
        assert_eq!(
            (
                a.verb.as_str(),
                a.namespace.as_str(),
                a.resource.as_str(),
                a.name.as_str(),
                a.subresource.as_str()
            ),
            ("update", "shop", "namespaces", "shop", "status")
        );
        let a = of(Method::DELETE, "/api/v1/namespaces/default/configmaps", None);
        assert_eq!(a.verb, "deletecollection");
        let a = of(
            Method::GET,
            "/api/v1/namespaces/default/configmaps",
            Some("fieldSelector=metadata.name%3Dapp"),
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "app"));
        // Discovery and the rest are paths, not resources.
        for path in ["/api", "/api/v1", "/apis/apps/v1", "/version", "/openapi/v2"] {
            let a = of(Method::GET, path, None);
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
    }
}
