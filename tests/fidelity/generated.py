"""Generated request sequences over every kind the sandbox serves, for comparing two API servers.

Usage:
  generated.py KUBECONFIG --record OUT.json [--seed N]    the answers of the server KUBECONFIG names
  generated.py KUBECONFIG --compare REC.json [--open F]   differences from a recording
  generated.py KUBECONFIG --against KUBECONFIG2           differences between two live servers

From a seed, each kind of `KINDS` (built-in ones and CRDs of varied schemas) is crossed with the
verbs and options of each area — errors and Status details, validation, defaults, lists and
watches, patch and apply, dry-run, discovery and unknown paths, custom resources — and with the
bodies that go wrong in each way (each invalid field, wrong kind or apiVersion, malformed JSON or
YAML, unknown fields, a wrong content type). The seed also picks further random combinations of
the same parts. Each sequence runs in a namespace of its own; what a client acts on in each
answer is kept, normalised as `builtin_kinds.py` does (volatile values out).

A comparison prints every difference. One listed in `crates/sandbox/apidiff-exceptions.txt`
(a version difference between the recorded server and v1.32, with the upstream change that made
it) passes; one listed in the `--open` file (a difference still to fix) passes with a note, and
a listed one that no longer differs is reported so the list only shrinks; any other fails.
"""

import argparse
import copy
import fnmatch
import json
import random
import re
import string
import sys
import time
import urllib.parse
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from builtin_kinds import Server, differences, normalise, outcome  # noqa: E402

AREAS = ("errors", "validation", "defaults", "lists", "patch", "dryrun", "discovery", "crd")


class Kind:
    """A resource: where it is served, a minimal valid object, and invalid variants."""

    def __init__(self, group, version, plural, kind, namespaced, body, invalid=(), update=None,
                 patchable="metadata", strategic=True):
        self.group, self.version, self.plural, self.kind = group, version, plural, kind
        self.namespaced, self.body, self.invalid = namespaced, body, list(invalid)
        # A change an update may make (merged into the object), a strategic merge patch works.
        self.update = update or {"metadata": {"labels": {"changed": "yes"}}}
        self.strategic = strategic

    @property
    def api_version(self):
        return f"{self.group}/{self.version}" if self.group else self.version

    def collection(self):
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        return f"{base}/namespaces/$NS/{self.plural}" if self.namespaced else f"{base}/{self.plural}"

    def object(self, name):
        body = copy.deepcopy(self.body)
        body.setdefault("metadata", {})["name"] = name
        body["apiVersion"], body["kind"] = self.api_version, self.kind
        return body


def container(name="main", image="busybox:1.36"):
    return {"name": name, "image": image}


def pod_spec(restart=None):
    spec = {"containers": [container()]}
    if restart:
        spec["restartPolicy"] = restart
    return spec


def template(restart=None):
    return {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec(restart)}


SEL = {"matchLabels": {"app": "web"}}


def set_path(obj, path, value):
    """`obj` with `path` (dots; `[i]` for list items) set to `value`; `None` removes it."""
    out = copy.deepcopy(obj)
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    here = out
    for p in parts[:-1]:
        here = here[int(p[1:-1])] if p.startswith("[") else here.setdefault(p, {})
    last = parts[-1]
    if last.startswith("["):
        here[int(last[1:-1])] = value
    elif value is None:
        here.pop(last, None)
    else:
        here[last] = value
    return out


def widget_crd(plural, kind, schema, status=True, scale=False):
    subresources = {}
    if status:
        subresources["status"] = {}
    if scale:
        subresources["scale"] = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.fidelity.example.com"},
        "spec": {"group": "fidelity.example.com", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": kind, "listKind": f"{kind}List"},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": subresources,
                               "schema": {"openAPIV3Schema": schema}}]},
    }


GADGET_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "required": ["size"], "properties": {
        "size": {"type": "integer", "minimum": 0, "maximum": 10},
        "color": {"type": "string", "enum": ["red", "blue"], "default": "blue"},
        "port": {"x-kubernetes-int-or-string": True},
        "name": {"type": "string", "pattern": "^[a-z]+$", "maxLength": 8},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "replicas": {"type": "integer", "default": 1},
    }},
    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}, "phase": {"type": "string"}}},
}}
BLOB_SCHEMA = {"type": "object", "properties": {
    "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": {
        "ratio": {"type": "number", "nullable": True},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "when": {"type": "string", "format": "date-time"},
    }},
}}
CRDS = [widget_crd("gadgets", "Gadget", GADGET_SCHEMA, scale=True), widget_crd("blobs", "Blob", BLOB_SCHEMA, status=False)]

KINDS = [
    Kind("", "v1", "configmaps", "ConfigMap", True, {"data": {"a": "b"}},
         [("data-key", lambda b: set_path(b, "data", {"bad key!": "x"}))]),
    Kind("", "v1", "secrets", "Secret", True, {"stringData": {"a": "b"}},
         [("type-missing-key", lambda b: set_path(set_path(b, "type", "kubernetes.io/tls"), "stringData", {"x": "y"}))]),
    Kind("", "v1", "serviceaccounts", "ServiceAccount", True, {}),
    Kind("", "v1", "services", "Service", True, {"spec": {"ports": [{"port": 80}], "selector": {"app": "web"}}},
         [("no-ports", lambda b: set_path(b, "spec.ports", [])),
          ("bad-port", lambda b: set_path(b, "spec.ports", [{"port": 70000}])),
          ("bad-type", lambda b: set_path(b, "spec.type", "Sometimes"))],
         update={"spec": {"ports": [{"port": 81}]}}),
    Kind("", "v1", "pods", "Pod", True, {"spec": pod_spec()},
         [("no-containers", lambda b: set_path(b, "spec.containers", [])),
          ("no-image", lambda b: set_path(b, "spec.containers", [{"name": "main"}])),
          ("bad-restart", lambda b: set_path(b, "spec.restartPolicy", "Sometimes")),
          ("dup-container", lambda b: set_path(b, "spec.containers", [container(), container()])),
          ("bad-cpu", lambda b: set_path(b, "spec.containers[0]", dict(container(), resources={"requests": {"cpu": "-1"}})))]),
    Kind("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True,
         {"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}},
         [("no-modes", lambda b: set_path(b, "spec.accessModes", [])),
          ("no-storage", lambda b: set_path(b, "spec.resources", {}))]),
    Kind("", "v1", "endpoints", "Endpoints", True,
         {"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]},
         [("bad-ip", lambda b: set_path(b, "subsets[0].addresses", [{"ip": "nope"}]))]),
    Kind("", "v1", "limitranges", "LimitRange", True,
         {"spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}}]}}),
    Kind("", "v1", "resourcequotas", "ResourceQuota", True, {"spec": {"hard": {"pods": "10"}}},
         [("bad-quantity", lambda b: set_path(b, "spec.hard", {"pods": "-1"}))]),
    Kind("", "v1", "podtemplates", "PodTemplate", True, {"template": template()}),
    Kind("", "v1", "replicationcontrollers", "ReplicationController", True, {"spec": {"template": template()}},
         [("negative-replicas", lambda b: set_path(b, "spec.replicas", -1))]),
    Kind("apps", "v1", "deployments", "Deployment", True, {"spec": {"selector": SEL, "template": template()}},
         [("no-selector", lambda b: set_path(b, "spec.selector", None)),
          ("mismatch", lambda b: set_path(b, "spec.selector", {"matchLabels": {"app": "db"}})),
          ("negative-replicas", lambda b: set_path(b, "spec.replicas", -1)),
          ("bad-strategy", lambda b: set_path(b, "spec.strategy", {"type": "Sometimes"}))]),
    Kind("apps", "v1", "replicasets", "ReplicaSet", True, {"spec": {"selector": SEL, "template": template()}},
         [("mismatch", lambda b: set_path(b, "spec.selector", {"matchLabels": {"app": "db"}}))]),
    Kind("apps", "v1", "statefulsets", "StatefulSet", True,
         {"spec": {"selector": SEL, "serviceName": "web", "template": template()}},
         [("bad-policy", lambda b: set_path(b, "spec.podManagementPolicy", "Sometimes"))]),
    Kind("apps", "v1", "daemonsets", "DaemonSet", True, {"spec": {"selector": SEL, "template": template()}},
         [("empty-selector", lambda b: set_path(b, "spec.selector", {}))]),
    Kind("apps", "v1", "controllerrevisions", "ControllerRevision", True, {"revision": 1, "data": {"a": 1}}),
    Kind("batch", "v1", "jobs", "Job", True, {"spec": {"template": template("Never")}},
         [("restart-always", lambda b: set_path(b, "spec.template.spec.restartPolicy", "Always")),
          ("negative-parallelism", lambda b: set_path(b, "spec.parallelism", -1))]),
    Kind("batch", "v1", "cronjobs", "CronJob", True,
         {"spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template("OnFailure")}}}},
         [("bad-schedule", lambda b: set_path(b, "spec.schedule", "61 * * * *")),
          ("bad-policy", lambda b: set_path(b, "spec.concurrencyPolicy", "Sometimes"))]),
    Kind("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
         {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}},
         [("zero-max", lambda b: set_path(b, "spec.maxReplicas", 0))]),
    Kind("autoscaling", "v1", "horizontalpodautoscalers", "HorizontalPodAutoscaler", True,
         {"spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 3}}),
    Kind("networking.k8s.io", "v1", "ingresses", "Ingress", True,
         {"spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}},
         [("no-backend", lambda b: set_path(b, "spec", {"rules": [{"host": "a.example.com"}]}))]),
    Kind("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", True, {"spec": {"podSelector": {}}},
         [("bad-type", lambda b: set_path(b, "spec.policyTypes", ["Sideways"]))]),
    Kind("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
         {"spec": {"minAvailable": 1, "selector": SEL}},
         [("both", lambda b: set_path(b, "spec.maxUnavailable", 1))]),
    Kind("rbac.authorization.k8s.io", "v1", "roles", "Role", True,
         {"rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
         [("no-verbs", lambda b: set_path(b, "rules", [{"apiGroups": [""], "resources": ["pods"]}]))]),
    Kind("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True,
         {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
          "subjects": [{"kind": "ServiceAccount", "name": "default"}]}),
    Kind("coordination.k8s.io", "v1", "leases", "Lease", True, {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15}},
         [("negative-duration", lambda b: set_path(b, "spec.leaseDurationSeconds", -1))]),
    Kind("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", True,
         {"addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]},
         [("bad-type", lambda b: set_path(b, "addressType", "IPv5"))]),
    Kind("events.k8s.io", "v1", "events", "Event", True,
         {"eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "fid/ctl", "reportingInstance": "i",
          "action": "Test", "reason": "Test", "type": "Normal", "regarding": {"kind": "Pod", "name": "web"}},
         [("bad-type", lambda b: set_path(b, "type", "Loud"))]),
    Kind("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, {"value": 100},
         [("too-high", lambda b: set_path(b, "value", 2000000000))]),
    Kind("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, {"provisioner": "example.com/fid"},
         [("no-provisioner", lambda b: set_path(b, "provisioner", None))]),
    Kind("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False,
         {"rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
    Kind("networking.k8s.io", "v1", "ingressclasses", "IngressClass", False, {"spec": {"controller": "example.com/fid"}}),
    Kind("fidelity.example.com", "v1", "gadgets", "Gadget", True, {"spec": {"size": 3}},
         [("too-big", lambda b: set_path(b, "spec.size", 11)),
          ("no-size", lambda b: set_path(b, "spec", {"color": "red"})),
          ("bad-enum", lambda b: set_path(b, "spec.color", "green")),
          ("bad-pattern", lambda b: set_path(b, "spec.name", "ABC")),
          ("too-many", lambda b: set_path(b, "spec.tags", ["a", "b", "c"])),
          ("wrong-type", lambda b: set_path(b, "spec.size", "three"))],
         strategic=False),
    Kind("fidelity.example.com", "v1", "blobs", "Blob", True, {"spec": {"ratio": 0.5, "anything": {"x": [1, 2]}}},
         [("bad-date", lambda b: set_path(b, "spec.when", "yesterday")),
          ("bad-map", lambda b: set_path(b, "spec.labels", {"a": 1}))],
         strategic=False),
]

MERGE = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
APPLY = "application/apply-patch+yaml"


def step(method, path, body=None, content_type="application/json", keep=False):
    return {"method": method, "path": path, "body": body, "content_type": content_type, "keep": keep}


def sequences(seed):
    """(name, area, steps): every sequence, in a fixed order for a seed."""
    rng = random.Random(seed)
    out = []

    def add(area, name, steps):
        if not any(s["keep"] for s in steps):
            steps[-1]["keep"] = True
        # A custom kind's sequences are the CRD area's, named with the area they test too.
        if isinstance(area, tuple):
            area, name = area[0], f"{area[1]}/{name}"
        out.append((f"{area}/{name}", area, steps))

    for k in KINDS:
        c = k.collection()
        area_of = (lambda a: ("crd", a)) if k.group == "fidelity.example.com" else (lambda a: a)
        tag = f"{k.plural}.{k.group or 'core'}.{k.version}"
        create = step("POST", c, k.object("obj$N"))
        one = f"{c}/obj$N"
        # defaults: what a minimal object reads back as.
        add(area_of("defaults"), f"{tag}/create", [step("POST", c, k.object("obj$N"))])
        add(area_of("defaults"), f"{tag}/get", [create, step("GET", one)])
        # errors and their Status details.
        add(area_of("errors"), f"{tag}/get-missing", [step("GET", f"{c}/missing$N")])
        add(area_of("errors"), f"{tag}/delete-missing", [step("DELETE", f"{c}/missing$N")])
        add(area_of("errors"), f"{tag}/create-twice", [create, step("POST", c, k.object("obj$N"))])
        add(area_of("errors"), f"{tag}/update-stale", [create, step("PUT", one, set_path(k.object("obj$N"), "metadata.resourceVersion", "1"))])
        add(area_of("errors"), f"{tag}/update-unparsable-version", [create, step("PUT", one, set_path(k.object("obj$N"), "metadata.resourceVersion", "abc"))])
        add(area_of("errors"), f"{tag}/update-missing", [step("PUT", f"{c}/missing$N", k.object("missing$N"))])
        add(area_of("errors"), f"{tag}/update-name-mismatch", [create, step("PUT", one, k.object("other$N"))])
        add(area_of("errors"), f"{tag}/delete-precondition-uid", [create, step("DELETE", one, {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}})])
        add(area_of("errors"), f"{tag}/delete-precondition-version", [create, step("DELETE", one, {"preconditions": {"resourceVersion": "1"}})])
        add(area_of("errors"), f"{tag}/delete-bad-propagation", [create, step("DELETE", one, {"propagationPolicy": "Sometimes"})])
        add(area_of("errors"), f"{tag}/unknown-subresource", [create, step("GET", f"{one}/nope")])
        add(area_of("errors"), f"{tag}/patch-collection", [step("PATCH", c, {}, MERGE)])
        # validation: each invalid field, then what every kind shares.
        for label, mutate in k.invalid:
            add(area_of("validation"), f"{tag}/invalid-{label}", [step("POST", c, mutate(k.object("obj$N")))])
            add(area_of("validation"), f"{tag}/update-invalid-{label}", [create, step("PUT", one, mutate(set_path(k.object("obj$N"), "metadata.resourceVersion", None)))])
        add(area_of("validation"), f"{tag}/bad-name", [step("POST", c, k.object("Bad_Name$N"))])
        add(area_of("validation"), f"{tag}/no-name", [step("POST", c, set_path(k.object("x$N"), "metadata.name", None))])
        add(area_of("validation"), f"{tag}/bad-label", [step("POST", c, set_path(k.object("obj$N"), "metadata.labels", {"bad key!": "v"}))])
        add(area_of("validation"), f"{tag}/wrong-kind", [step("POST", c, set_path(k.object("obj$N"), "kind", "Wrong"))])
        add(area_of("validation"), f"{tag}/wrong-api-version", [step("POST", c, set_path(k.object("obj$N"), "apiVersion", "nope/v9"))])
        if k.namespaced:
            add(area_of("validation"), f"{tag}/namespace-mismatch", [step("POST", c, set_path(k.object("obj$N"), "metadata.namespace", "elsewhere"))])
        add(area_of("validation"), f"{tag}/malformed-json", [step("POST", c, b'{"metadata": {"name": "obj$N"')])
        add(area_of("validation"), f"{tag}/not-an-object", [step("POST", c, b'[1, 2]')])
        yaml_body = f"apiVersion: {k.api_version}\nkind: {k.kind}\nmetadata:\n  name: obj$N\n".encode()
        add(area_of("validation"), f"{tag}/yaml", [step("POST", c, yaml_body, "application/yaml")])
        add(area_of("validation"), f"{tag}/malformed-yaml", [step("POST", c, b"metadata: [name: obj", "application/yaml")])
        add(area_of("validation"), f"{tag}/text-plain", [step("POST", c, b"hello", "text/plain")])
        unknown = set_path(k.object("obj$N"), "spec.nonsense", 1) if "spec" in k.body else set_path(k.object("obj$N"), "nonsense", 1)
        for mode in ("Strict", "Warn", "Ignore", "Bogus"):
            add(area_of("validation"), f"{tag}/unknown-field-{mode}", [step("POST", f"{c}?fieldValidation={mode}", unknown)])
        dup = json.dumps(k.object("obj$N"))[:-1] + ', "kind": "' + k.kind + '"}'
        add(area_of("validation"), f"{tag}/duplicate-field-strict", [step("POST", f"{c}?fieldValidation=Strict", dup.encode())])
        # lists and watches. A cluster-scoped kind's whole list is the cluster's (a real one
        # holds its own objects): only what the sequence names is listed there.
        whole = k.namespaced
        if whole:
            add(area_of("lists"), f"{tag}/list-limit", [create, step("POST", c, k.object("obj2$N")), step("GET", f"{c}?limit=1")])
        add(area_of("lists"), f"{tag}/list-bad-continue", [step("GET", f"{c}?limit=1&continue=garbage")])
        add(area_of("lists"), f"{tag}/list-bad-label-selector", [step("GET", f"{c}?labelSelector=a%20in%20(b")])
        add(area_of("lists"), f"{tag}/list-label-selector", [create, step("GET", f"{c}?labelSelector=app%3Dnone")])
        add(area_of("lists"), f"{tag}/list-field-selector-name", [create, step("GET", f"{c}?fieldSelector=metadata.name%3Dobj$N")])
        add(area_of("lists"), f"{tag}/list-field-selector-unknown", [step("GET", f"{c}?fieldSelector=spec.nonsense%3Dx")])
        add(area_of("lists"), f"{tag}/list-version-match-no-version", [step("GET", f"{c}?resourceVersionMatch=Exact")])
        add(area_of("lists"), f"{tag}/list-version-match-bogus", [step("GET", f"{c}?resourceVersion=0&resourceVersionMatch=Sometimes")])
        # (Not resourceVersion=0: "any version" lets a real server's watch cache answer from
        # before the create, which no two runs agree on.)
        add(area_of("lists"), f"{tag}/list-version-unparsable", [step("GET", f"{c}?resourceVersion=abc")])
        add(area_of("lists"), f"{tag}/watch-bad-selector", [step("GET", f"{c}?watch=true&labelSelector=a%20in%20(b&timeoutSeconds=1")])
        if whole:
            add(area_of("lists"), f"{tag}/watch-from-zero", [create, step("GET", f"{c}?watch=true&resourceVersion=0&timeoutSeconds=1")])
        # patch and apply.
        add(area_of("patch"), f"{tag}/merge", [create, step("PATCH", one, k.update, MERGE)])
        add(area_of("patch"), f"{tag}/merge-not-object", [create, step("PATCH", one, b"[1]", MERGE)])
        add(area_of("patch"), f"{tag}/json-patch-test-fails", [create, step("PATCH", one, [{"op": "test", "path": "/metadata/name", "value": "other$N"}], JSON_PATCH)])
        add(area_of("patch"), f"{tag}/json-patch-bad-path", [create, step("PATCH", one, [{"op": "replace", "path": "/nope/deeper", "value": 1}], JSON_PATCH)])
        add(area_of("patch"), f"{tag}/json-patch-bad-op", [create, step("PATCH", one, [{"op": "frobnicate", "path": "/metadata"}], JSON_PATCH)])
        add(area_of("patch"), f"{tag}/strategic", [create, step("PATCH", one, k.update, STRATEGIC)])
        add(area_of("patch"), f"{tag}/apply-no-manager", [step("PATCH", one, k.object("obj$N"), APPLY)])
        add(area_of("patch"), f"{tag}/apply-create", [step("PATCH", f"{one}?fieldManager=fid", k.object("obj$N"), APPLY)])
        labelled = set_path(k.object("obj$N"), "metadata.labels", {"owner": "a"})
        add(area_of("patch"), f"{tag}/apply-conflict", [
            step("PATCH", f"{one}?fieldManager=a", labelled, APPLY),
            step("PATCH", f"{one}?fieldManager=b", set_path(labelled, "metadata.labels", {"owner": "b"}), APPLY)])
        add(area_of("patch"), f"{tag}/patch-missing", [step("PATCH", f"{c}/missing$N", k.update, MERGE)])
        add(area_of("patch"), f"{tag}/patch-unknown-type", [create, step("PATCH", one, k.update, "application/x-nope")])
        # dry-run.
        add(area_of("dryrun"), f"{tag}/create", [step("POST", f"{c}?dryRun=All", k.object("obj$N"), keep=True), step("GET", one, keep=True)])
        add(area_of("dryrun"), f"{tag}/bogus", [step("POST", f"{c}?dryRun=Sometimes", k.object("obj$N"))])
        add(area_of("dryrun"), f"{tag}/delete", [create, step("DELETE", f"{one}?dryRun=All", keep=True), step("GET", one, keep=True)])
        add(area_of("dryrun"), f"{tag}/update", [create, step("PATCH", f"{one}?dryRun=All", k.update, MERGE, keep=True), step("GET", one, keep=True)])
        add(area_of("dryrun"), f"{tag}/invalid", [step("POST", f"{c}?dryRun=All", set_path(k.object("obj$N"), "metadata.name", "Bad_Name$N"))])

    # discovery and unknown paths.
    for path in ("/apis/nope.example.com", "/apis/nope.example.com/v1", "/apis/apps/v9", "/apis/apps/v1/nopes",
                 "/api/v1/nopes", "/api/v9", "/api/v1/namespaces/$NS/nopes", "/apis/apps/v1/namespaces/$NS/nopes",
                 "/api/v1/namespaces/$NS/configmaps/x/y/z", "/nope", "/apis/apps/v1/namespaces", "/api/v1/namespaces/$NS/pods/x/exec",
                 "/api/v1/componentstatuses/nope", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                 "/api/v1/namespaces/$NS/configmaps?limit=-1",
                 "/api/v1/namespaces/$NS/configmaps?timeoutSeconds=abc"):
        add("discovery", f"path{path}", [step("GET", path)])
    for method in ("PUT", "DELETE", "POST"):
        add("discovery", f"method-{method}-on-group", [step(method, "/apis/apps/v1", {})])

    # Random combinations of the same parts, from the seed.
    parts = [(name, area, steps) for name, area, steps in out if area not in ("discovery",)]
    for i in range(len(parts) // 4):
        a = rng.choice(parts)
        b = rng.choice(parts)
        combined = [dict(s, keep=False) for s in a[2]] + [dict(s, keep=False) for s in b[2]]
        combined[-1]["keep"] = True
        out.append((f"mixed/{i:04d}:{a[0]}+{b[0]}", b[1], combined))
    return out


def run(server, seqs, log=None):
    """The kept answers of each sequence, each in a namespace of its own."""
    results = {}
    for n, (name, _area, steps) in enumerate(seqs):
        ns = "gen-" + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))
        server.send("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        kept = []
        for s in steps:
            path = s["path"].replace("$NS", ns)
            # Cluster-scoped objects are named after the namespace, so sequences do not meet.
            suffix = "" if "/namespaces/" in path else f"-{ns}"
            path = path.replace("$N", suffix)
            body = s["body"]
            if isinstance(body, (dict, list)):
                body = json.loads(json.dumps(body).replace("$NS", ns).replace("$N", suffix))
            elif isinstance(body, bytes):
                body = body.replace(b"$NS", ns.encode()).replace(b"$N", suffix.encode())
            try:
                code, answer = server.send_raw(s["method"], path, body, s["content_type"])
            except (OSError, TimeoutError) as e:
                print(f"  {name}: {s['method']} {path}: {e}", file=log or sys.stderr, flush=True)
                code, answer = "no answer", None
            if s["keep"]:
                kept.append(summarise(code, answer, ns, server.warnings))
        results[name] = kept[0] if len(kept) == 1 else {"steps": kept}
        server.send("DELETE", f"/api/v1/namespaces/{ns}")
        for k in KINDS:
            if not k.namespaced and any(s["path"].startswith(k.collection()) for s in steps):
                for obj in ("obj", "obj2", "missing", "other"):
                    server.send("DELETE", f"{k.collection()}/{obj}-{ns}")
        if log and n % 200 == 0:
            print(f"  {n}/{len(seqs)}", file=log, flush=True)
    return results


def summarise(code, answer, ns, warnings):
    """What a client acts on, as builtin_kinds.outcome, with a watch's events and a Status's
    details (group, kind, name, retry) kept."""
    if isinstance(answer, dict) and "events" in answer:
        events = [{"type": e.get("type"), "kind": (e.get("object") or {}).get("kind"),
                   "code": (e.get("object") or {}).get("code"), "reason": (e.get("object") or {}).get("reason")}
                  for e in answer["events"]]
        return {"code": code, "events": events}
    out = outcome(code, answer, ns, warnings)
    # The versions a precondition is compared with are each server's own.
    if "message" in out:
        out["message"] = re.sub(r"(ResourceVersion in (?:record|object meta):? ?\(?)\d+", r"\1N", out["message"])
    if isinstance(answer, dict) and answer.get("kind") == "Status":
        details = {k: v for k, v in (answer.get("details") or {}).items() if k != "causes"}
        if details:
            out["details"] = normalise(details, ns)
    elif isinstance(answer, dict) and answer.get("kind", "").endswith("List"):
        # A list: its items' names and whether it continues, not its versions.
        out["object"] = {"kind": answer.get("kind"), "items": sorted(i.get("metadata", {}).get("name", "") for i in answer.get("items", [])),
                         "continues": bool((answer.get("metadata") or {}).get("continue"))}
        out["object"]["items"] = [normalise(i, ns) for i in out["object"]["items"]]
    return out


def live_server(kubeconfig):
    """A Server that can send raw bodies and read a watch's events."""
    server = Server(kubeconfig)

    def send_raw(method, path, body, content_type):
        if isinstance(body, (dict, list)) or body is None:
            data = None if body is None else json.dumps(body).encode()
        else:
            data = body
        return server.request(method, path, data, content_type)

    server.send_raw = send_raw
    return server


def setup(server):
    """The CRDs the custom kinds need, established."""
    for crd in CRDS:
        server.send("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    for crd in CRDS:
        server.wait(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}",
                    "/status/acceptedNames/kind")
    time.sleep(2)


def rules(path, prefix=None):
    """`(name glob, field glob, why)` rules of a list file: `NAME FIELD why...` a line (after
    `prefix`, when the file holds other lines too); `#` comments and blank lines skipped."""
    out = []
    if path and Path(path).exists():
        for line in Path(path).read_text().splitlines():
            line = line.split(" #", 1)[0].strip() if not line.startswith("#") else ""
            if prefix:
                if not line.startswith(prefix + " "):
                    continue
                line = line[len(prefix) + 1:]
            parts = line.split(None, 2)
            if len(parts) >= 2:
                out.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
    return out


def covered(name, difference, by):
    field = difference.split(":", 1)[0]
    return next((r for r in by if fnmatch.fnmatchcase(name, r[0]) and fnmatch.fnmatchcase(field, r[1])), None)


def compare(expected, actual, seqs, exceptions, open_list):
    """Prints every difference, with what explains it; returns how many nothing explains."""
    areas = {name: area for name, area, _ in seqs}
    per_area, differing_area = Counter(), Counter()
    counts = Counter()
    used = set()
    for name in sorted(expected):
        area = areas.get(name, "?")
        per_area[area] += 1
        found = differences(expected[name], actual.get(name, {}))
        if not found:
            continue
        differing_area[area] += 1
        labels = []
        for d in found:
            rule = covered(name, d, exceptions)
            if rule:
                labels.append(("version", d, rule[2]))
                continue
            rule = covered(name, d, open_list)
            if rule:
                used.add(rule)
                labels.append(("open", d, rule[2]))
            else:
                labels.append(("unexplained", d, ""))
        kinds = {k for k, _, _ in labels}
        verdict = "unexplained" if "unexplained" in kinds else "open" if "open" in kinds else "version"
        counts[verdict] += 1
        print(f"CASE {name}: DIFF ({verdict})")
        for kind, d, why in labels[:8]:
            print(f"  {d[:400]}" + (f"  [{kind}: {why}]" if why else ""))
    print("per area: sequences, different")
    for area in AREAS:
        print(f"  {area:11} {per_area[area]:5} {differing_area[area]:5}")
    mixed = sum(1 for n in expected if n.startswith("mixed/"))
    print(f"generated: {len(expected)} sequences ({mixed} mixed), {sum(differing_area.values())} different: "
          f"{counts['version']} by version differences, {counts['open']} open, {counts['unexplained']} not explained")
    for rule in open_list:
        if rule not in used:
            print(f"open-list entry no longer needed: {rule[0]} {rule[1]}")
    return counts["unexplained"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig")
    parser.add_argument("--record")
    parser.add_argument("--compare")
    parser.add_argument("--against")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--only", help="a regular expression the sequence names must match")
    parser.add_argument("--open", help="differences still to fix: `NAME-GLOB FIELD-GLOB why` a line")
    parser.add_argument("--exceptions", default=str(Path(__file__).parents[2] / "crates/sandbox/apidiff-exceptions.txt"))
    args = parser.parse_args()
    if args.compare:
        with open(args.compare) as f:
            recording = json.load(f)
        args.seed = recording["seed"]
    seqs = sequences(args.seed)
    if args.only:
        seqs = [s for s in seqs if re.search(args.only, s[0])]
    server = live_server(args.kubeconfig)
    setup(server)
    started = time.monotonic()
    results = run(server, seqs, log=sys.stderr)
    print(f"ran {len(seqs)} sequences in {time.monotonic() - started:.0f} s", file=sys.stderr)
    if args.record:
        version = server.send("GET", "/version")[1].get("gitVersion")
        with open(args.record, "w") as f:
            json.dump({"server": version, "seed": args.seed, "cases": results}, f, indent=0, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(results)} sequences")
        return
    if args.against:
        other = live_server(args.against)
        setup(other)
        expected = run(other, seqs)
    else:
        expected = {k: v for k, v in recording["cases"].items() if k in {s[0] for s in seqs}}
    exceptions = rules(args.exceptions, prefix="generated")
    open_list = rules(args.open)
    sys.exit(1 if compare(expected, results, seqs, exceptions, open_list) else 0)


if __name__ == "__main__":
    main()
