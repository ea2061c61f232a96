"""The built-in kinds on any Kubernetes API server, normalised so two servers' answers compare.

Usage:
  builtin_kinds.py KUBECONFIG --record OUT.json      answers of the server KUBECONFIG names
  builtin_kinds.py KUBECONFIG --compare GOLDEN.json  differences from a recording (exit 1 on any
                                                     the recording does not explain)

Each case sends one request in a namespace of its own and keeps what a client acts on: the
status code, the Status reason and causes (field and message), and the object a create or an
update returns, without what differs between any two runs (uids, versions, times, generated
names, addresses, tokens). A recording's "versions" lists, per case and field, the answers
that differ between the recorded server's version and the one the sandbox follows (v1.32), each
with the upstream change that made the difference; its "formats" the few messages upstream
prints as Go values no other implementation reproduces (pointer addresses), where the field,
reason and code still agree; its "not_served" what the sandbox does not serve on purpose
(the subresources that need a kubelet); its "add_ons" what the sandbox serves that a cluster
serves only with an add-on installed (metrics-server's `metrics.k8s.io`). One more case, "discovery", compares every resource of
legacy discovery: verbs, short names, categories, scope, kind.
"""

import argparse
import http.client
import base64
import json
import random
import re
import ssl
import string
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import yaml

VOLATILE_META = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "selfLink")
TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


class Server:
    """A kubeconfig's server, token and CA."""

    def __init__(self, kubeconfig):
        with open(kubeconfig) as f:
            config = yaml.safe_load(f)
        context = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
        cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
        user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
        self.url = cluster["server"].rstrip("/")
        self.token = user.get("token", "")
        self.ssl = ssl.create_default_context()
        if cluster.get("insecure-skip-tls-verify"):
            self.ssl.check_hostname = False
            self.ssl.verify_mode = ssl.CERT_NONE
        elif "certificate-authority-data" in cluster:
            with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as ca:
                ca.write(base64.b64decode(cluster["certificate-authority-data"]))
            self.ssl.load_verify_locations(ca.name)
        # A client certificate, as an administrator's kubeconfig of a real cluster often has.
        if "client-certificate-data" in user:
            with tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False) as cert, \
                    tempfile.NamedTemporaryFile("wb", suffix=".key", delete=False) as key:
                cert.write(base64.b64decode(user["client-certificate-data"]))
                key.write(base64.b64decode(user["client-key-data"]))
            self.ssl.load_cert_chain(cert.name, key.name)
        elif "client-certificate" in user:
            self.ssl.load_cert_chain(user["client-certificate"], user["client-key"])

    def send(self, method, path, body=None, content_type="application/json"):
        data = None if body is None else json.dumps(body).encode()
        return self.request(method, path, data, content_type)

    def request(self, method, path, data, content_type="application/json"):
        """One request with `data` as the body's bytes: the status and the JSON answer (a watch's
        answer as `{"events": [...]}`); the Warning headers in `self.warnings`. One connection is
        kept open and reused, as clients do."""
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in (1, 2):
            try:
                conn = self.connection()
                conn.request(method, self.prefix + path, body=data, headers=headers)
                r = conn.getresponse()
                text = r.read()
                break
            except (OSError, http.client.HTTPException):
                self.conn = None
                if attempt == 2:
                    raise
        self.warnings = r.headers.get_all("Warning") or []
        if r.status < 300 and "watch=true" in path:
            return r.status, {"events": [json.loads(line) for line in text.splitlines() if line.strip()]}
        try:
            return r.status, json.loads(text or b"null")
        except ValueError:
            return r.status, {"body": text.decode(errors="replace")[:200]}

    def connection(self):
        if getattr(self, "conn", None) is None:
            parsed = urllib.parse.urlsplit(self.url)
            self.prefix = parsed.path.rstrip("/")
            self.conn = http.client.HTTPSConnection(parsed.hostname, parsed.port or 443, context=self.ssl, timeout=30)
        return self.conn

    def wait(self, path, pointer, want=None, seconds=60):
        """Polls `path` until the JSON pointer `pointer` is there (and equals `want`, if given):
        what a controller of the server's writes, a test waits for."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            _, body = self.send("GET", path)
            value = body
            for part in pointer.strip("/").split("/"):
                value = value.get(part.replace("~1", "/")) if isinstance(value, dict) else None
            if value is not None and (want is None or value == want):
                return
            time.sleep(0.1)


def normalise(value, ns):
    """`value` without what differs between runs; `ns` (the case's namespace) as `$NS`."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in VOLATILE_META and isinstance(v, (str, list, type(None))):
                continue
            if k in ("clusterIP",) or k in ("clusterIPs",):
                out[k] = "$IP"
                continue
            out[k] = normalise(v, ns)
        return out
    if isinstance(value, list):
        return [normalise(v, ns) for v in value]
    if isinstance(value, str):
        if value == ns:
            return "$NS"
        if TIME.match(value):
            return "$TIME"
        value = re.sub(r"^kube-api-access-[a-z0-9]{5}$", "kube-api-access-$X", value)
        # A generated name in a message (`pods "web-x7k2p" is forbidden`): the five characters of
        # `utilrand.String`'s alphabet.
        value = re.sub(r'-[bcdfghjklmnpqrstvwxz2456789]{5}"', '-$X"', value)
        value = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "$UID", value)
        # A Go pointer printed by `%#v` (`(*intstr.IntOrString)(0xc014b24e80)`): an address.
        value = re.sub(r"\)\(0x[0-9a-f]+\)", ")($PTR)", value)
        if value.count(".") == 2 and len(value) > 100 and " " not in value:
            return "$TOKEN"
        return value.replace(ns, "$NS")
    return value


def outcome(code, body, ns, warnings=()):
    """What a client acts on in one answer: with the Warning headers, when there are any."""
    out = {"code": code}
    if warnings:
        out["warnings"] = [normalise(w, ns) for w in warnings]
    if isinstance(body, dict) and body.get("kind") == "Status":
        out["reason"] = body.get("reason", "")
        out["message"] = normalise(body.get("message", ""), ns)
        causes = (body.get("details") or {}).get("causes") or []
        out["causes"] = [[c.get("field", ""), normalise(c.get("message", ""), ns)] for c in causes]
    elif isinstance(body, dict):
        obj = normalise(body, ns)
        meta = obj.get("metadata", {})
        for k in ("name", "generateName"):
            if k in meta and isinstance(meta[k], str):
                meta[k] = re.sub(r"-[a-z0-9]{5}$", "-$X", meta[k])
        out["object"] = obj
    return out


def container(name="main", image="busybox:1.36"):
    return {"name": name, "image": image}


def template(app, restart=None):
    spec = {"containers": [container()]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": {"app": app}}, "spec": spec}


def cases():
    """(name, [(method, path-with-$NS, body)]): the answer of each case's last request is kept."""
    n = "/api/v1/namespaces/$NS"
    apps = "/apis/apps/v1/namespaces/$NS"
    batch = "/apis/batch/v1/namespaces/$NS"
    sel = {"matchLabels": {"app": "web"}}
    yield "pod-minimal", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}})]
    yield "pod-limits", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [
        dict(container(), resources={"limits": {"cpu": "1", "memory": "1Gi"}})]}})]
    yield "pod-no-containers", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": []}})]
    yield "pod-bad-container", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "Bad_Name"}]}})]
    yield "pod-bad-restart", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()], "restartPolicy": "Sometimes"}})]
    yield "pod-missing-class", [("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()], "priorityClassName": "nope"}})]
    yield "pod-system-class", [("POST", "/api/v1/namespaces/kube-system/pods", {"metadata": {"generateName": "fid-"}, "spec": {"containers": [container()], "priorityClassName": "system-cluster-critical"}})]
    yield "pod-update-forbidden", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("PATCH", f"{n}/pods/web", {"spec": {"restartPolicy": "Never"}}),
    ]
    yield "pod-update-image", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("PATCH", f"{n}/pods/web", {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}),
    ]
    yield "pod-binding", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("POST", f"{n}/pods/web/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "web"}, "target": {"kind": "Node", "name": "node-1"}}),
    ]
    yield "pod-binding-twice", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("POST", f"{n}/pods/web/binding", {"metadata": {"name": "web"}, "target": {"kind": "Node", "name": "node-1"}}),
        ("POST", f"{n}/pods/web/binding", {"metadata": {"name": "web"}, "target": {"kind": "Node", "name": "node-2"}}),
    ]
    yield "pod-log-unbound", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("GET", f"{n}/pods/web/log", None),
    ]
    yield "pod-eviction", [
        ("POST", f"{n}/pods", {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}),
        ("POST", f"{n}/pods/web/eviction", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}}),
    ]
    yield "rs-minimal", [("POST", f"{apps}/replicasets", {"metadata": {"name": "web"}, "spec": {"selector": sel, "template": template("web")}})]
    yield "rs-selector-mismatch", [("POST", f"{apps}/replicasets", {"metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "db"}}, "template": template("web")}})]
    yield "rs-scale", [
        ("POST", f"{apps}/replicasets", {"metadata": {"name": "web"}, "spec": {"selector": sel, "template": template("web")}}),
        ("GET", f"{apps}/replicasets/web/scale", None),
    ]
    sts = {"metadata": {"name": "web"}, "spec": {"selector": sel, "serviceName": "web", "template": template("web"),
           "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    yield "sts-minimal", [("POST", f"{apps}/statefulsets", sts)]
    yield "sts-update-forbidden", [("POST", f"{apps}/statefulsets", sts), ("PATCH", f"{apps}/statefulsets/web", {"spec": {"serviceName": "other"}})]
    yield "sts-scale", [("POST", f"{apps}/statefulsets", sts), ("PATCH", f"{apps}/statefulsets/web/scale", {"spec": {"replicas": 3}})]
    yield "ds-minimal", [("POST", f"{apps}/daemonsets", {"metadata": {"name": "web"}, "spec": {"selector": sel, "template": template("web")}})]
    yield "ds-empty-selector", [("POST", f"{apps}/daemonsets", {"metadata": {"name": "web"}, "spec": {"selector": {}, "template": template("web")}})]
    yield "job-minimal", [("POST", f"{batch}/jobs", {"metadata": {"name": "pi"}, "spec": {"template": template("pi", "Never")}})]
    yield "job-restart-always", [("POST", f"{batch}/jobs", {"metadata": {"name": "pi"}, "spec": {"template": template("pi")}})]
    yield "job-template-immutable", [
        ("POST", f"{batch}/jobs", {"metadata": {"name": "pi"}, "spec": {"template": template("pi", "Never")}}),
        ("PATCH", f"{batch}/jobs/pi", {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]}}}}),
    ]
    cron = {"metadata": {"name": "tick"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": template("tick", "OnFailure")}}}}
    yield "cronjob-minimal", [("POST", f"{batch}/cronjobs", cron)]
    for bad in ("* * *", "70 * * * *", "*/0 * * * *", "@sometimes"):
        body = json.loads(json.dumps(cron))
        body["spec"]["schedule"] = bad
        yield f"cronjob-schedule-{bad}", [("POST", f"{batch}/cronjobs", body)]
    pvc = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard"}}
    yield "pvc-minimal", [("POST", f"{n}/persistentvolumeclaims", pvc)]
    yield "pvc-empty", [("POST", f"{n}/persistentvolumeclaims", {"metadata": {"name": "data"}, "spec": {}})]
    yield "pvc-class-immutable", [("POST", f"{n}/persistentvolumeclaims", pvc), ("PATCH", f"{n}/persistentvolumeclaims/data", {"spec": {"storageClassName": "fast"}})]
    yield "rc-minimal", [("POST", f"{n}/replicationcontrollers", {"metadata": {"name": "web"}, "spec": {"template": template("web")}})]
    yield "rc-scale", [("POST", f"{n}/replicationcontrollers", {"metadata": {"name": "web"}, "spec": {"template": template("web")}}),
                       ("GET", f"{n}/replicationcontrollers/web/scale", None)]
    hpa = "/apis/autoscaling/v2/namespaces/$NS/horizontalpodautoscalers"
    target = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
    yield "hpa-v2-minimal", [("POST", hpa, {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target, "maxReplicas": 5}})]
    yield "hpa-v2-bounds", [("POST", hpa, {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target, "minReplicas": 4, "maxReplicas": 2}})]
    yield "hpa-v1-read-as-v2", [
        ("POST", "/apis/autoscaling/v1/namespaces/$NS/horizontalpodautoscalers", {"metadata": {"name": "web"}, "spec": {"scaleTargetRef": target, "maxReplicas": 5, "targetCPUUtilizationPercentage": 60}}),
        ("GET", f"{hpa}/web", None),
    ]
    ing = "/apis/networking.k8s.io/v1/namespaces/$NS"
    backend = {"service": {"name": "web", "port": {"number": 80}}}
    yield "ingress-minimal", [("POST", f"{ing}/ingresses", {"metadata": {"name": "web"}, "spec": {"rules": [{"host": "a.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}]}})]
    yield "ingress-no-path-type", [("POST", f"{ing}/ingresses", {"metadata": {"name": "web"}, "spec": {"rules": [{"http": {"paths": [{"path": "/", "backend": backend}]}}]}})]
    yield "netpol-minimal", [("POST", f"{ing}/networkpolicies", {"metadata": {"name": "db"}, "spec": {"podSelector": {}, "egress": [{"ports": [{"port": 53}]}]}})]
    yield "endpoints-bad-ip", [("POST", f"{n}/endpoints", {"metadata": {"name": "web"}, "subsets": [{"addresses": [{"ip": "nope"}], "ports": [{"port": 80}]}]})]
    yield "endpointslice-bad-type", [("POST", "/apis/discovery.k8s.io/v1/namespaces/$NS/endpointslices", {"metadata": {"name": "web"}, "addressType": "IPv5", "endpoints": []})]
    yield "sa-token", [
        ("POST", f"{n}/serviceaccounts", {"metadata": {"name": "app"}}),
        ("POST", f"{n}/serviceaccounts/app/token", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["api"], "expirationSeconds": 3600}}),
    ]
    yield "sa-token-short", [
        ("POST", f"{n}/serviceaccounts", {"metadata": {"name": "app"}}),
        ("POST", f"{n}/serviceaccounts/app/token", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}}),
    ]
    yield "ssar", [("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {"spec": {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "$NS"}}})]
    yield "ssar-list", [("GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", None)]
    yield "priorityclass-reserved", [("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "system-fid"}, "value": 5})]
    yield "priorityclass-too-high", [("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "fid-high-$NS"}, "value": 2000000000})]
    yield "storageclass-no-provisioner", [("POST", "/apis/storage.k8s.io/v1/storageclasses", {"metadata": {"name": "fid-$NS"}})]
    yield "ingressclass-no-controller", [("POST", "/apis/networking.k8s.io/v1/ingressclasses", {"metadata": {"name": "fid-$NS"}, "spec": {}})]
    yield "node-bad-taint", [("POST", "/api/v1/nodes", {"metadata": {"name": "fid-$NS"}, "spec": {"taints": [{"key": "a", "effect": "Sometimes"}]}})]


def pod_security_cases():
    """Pods in namespaces whose labels ask PodSecurity admission for a level."""
    n = "/api/v1/namespaces/$NS"
    def level(name):
        return ("PATCH", n, {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": name}}})
    wide_open = {"metadata": {"name": "web"}, "spec": {
        "hostNetwork": True,
        "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
        "containers": [dict(container(), securityContext={"privileged": True, "capabilities": {"add": ["NET_ADMIN"]}},
                            ports=[{"containerPort": 80, "hostPort": 80}])],
    }}
    plain = {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}
    locked = {"metadata": {"name": "web"}, "spec": {
        "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [dict(container(), securityContext={"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}})],
    }}
    yield "psa-privileged-allows", [level("privileged"), ("POST", f"{n}/pods", wide_open)]
    yield "psa-baseline-refuses", [level("baseline"), ("POST", f"{n}/pods", wide_open)]
    yield "psa-baseline-allows-plain", [level("baseline"), ("POST", f"{n}/pods", plain)]
    yield "psa-restricted-refuses-plain", [level("restricted"), ("POST", f"{n}/pods", plain)]
    yield "psa-restricted-allows-locked", [level("restricted"), ("POST", f"{n}/pods", locked)]


def quota_cases():
    """ResourceQuota admission and the quota controller's counting."""
    n = "/api/v1/namespaces/$NS"
    def quota(name, hard):
        return [("POST", f"{n}/resourcequotas", {"metadata": {"name": name}, "spec": {"hard": hard}}),
                ("WAIT", f"{n}/resourcequotas/{name}", "/status/used")]
    plain = lambda name: {"metadata": {"name": name}, "spec": {"containers": [container()]}}
    sized = lambda name, cpu: {"metadata": {"name": name}, "spec": {"containers": [
        dict(container(), resources={"requests": {"cpu": cpu, "memory": "64Mi"}, "limits": {"memory": "128Mi"}})]}}
    # Not configmaps or secrets: a real cluster's controllers put one of each in a new namespace.
    yield "quota-status", quota("q", {"pods": "3", "count/deployments.apps": "4", "services.nodeports": "2", "requests.memory": "1Gi"}) + [
        ("POST", f"{n}/pods", sized("a", "250m")),
        ("GET", f"{n}/resourcequotas/q", None)]
    yield "quota-exceeded", quota("q", {"pods": "1"}) + [("POST", f"{n}/pods", plain("a")), ("POST", f"{n}/pods", plain("b"))]
    yield "quota-exceeded-generate-name", quota("q", {"pods": "0"}) + [
        ("POST", f"{n}/pods", {"metadata": {"generateName": "web-"}, "spec": {"containers": [container()]}})]
    yield "quota-exceeded-cpu", quota("compute", {"requests.cpu": "500m"}) + [
        ("POST", f"{n}/pods", sized("a", "300m")), ("POST", f"{n}/pods", sized("b", "300m"))]
    yield "quota-must-specify", quota("compute", {"requests.cpu": "1", "limits.memory": "1Gi"}) + [("POST", f"{n}/pods", plain("a"))]
    yield "quota-configmaps", quota("q", {"configmaps": "1"}) + [
        ("POST", f"{n}/configmaps", {"metadata": {"name": "a"}}), ("POST", f"{n}/configmaps", {"metadata": {"name": "b"}})]
    yield "quota-services", quota("q", {"services.nodeports": "1"}) + [
        ("POST", f"{n}/services", {"metadata": {"name": "web"}, "spec": {"type": "NodePort",
         "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}})]
    yield "quota-claims", quota("q", {"requests.storage": "1Gi", "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "0"}) + [
        ("POST", f"{n}/persistentvolumeclaims", {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
         "storageClassName": "fast", "resources": {"requests": {"storage": "2Gi"}}}})]


def eviction_cases():
    """The eviction subresource against PodDisruptionBudgets."""
    n = "/api/v1/namespaces/$NS"
    policy = "/apis/policy/v1/namespaces/$NS/poddisruptionbudgets"
    pod = {"metadata": {"name": "web", "labels": {"app": "web"}}, "spec": {"containers": [container()]}}
    running = ("PATCH", f"{n}/pods/web/status", {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    def budget(name):
        return ("POST", policy, {"metadata": {"name": name}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}})
    # What the disruption controller writes for one ready pod and minAvailable 1; the sandbox runs
    # no such controller, so it is written here (a real server's writes the same).
    observed = ("PATCH", f"{policy}/web/status", {"status": {"observedGeneration": 1, "disruptionsAllowed": 0,
                                                           "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1}})
    evict = ("POST", f"{n}/pods/web/eviction", {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "web"}})
    yield "evict-pending-ignores-budget", [("POST", f"{n}/pods", pod), budget("web"), evict]
    yield "evict-budget-exhausted", [("POST", f"{n}/pods", pod), running, budget("web"), observed,
                                     ("WAIT", f"{policy}/web", "/status/observedGeneration"), evict]
    yield "evict-two-budgets", [("POST", f"{n}/pods", pod), running, budget("web"), budget("web2"), evict]
    yield "evict-wrong-name", [("POST", f"{n}/pods", pod), ("POST", f"{n}/pods/web/eviction", {"metadata": {"name": "other"}})]


def pod_security_warn_cases():
    """PodSecurity's warn level, and a new enforce level over pods already there."""
    n = "/api/v1/namespaces/$NS"
    def label(key, value):
        return ("PATCH", n, {"metadata": {"labels": {f"pod-security.kubernetes.io/{key}": value}}})
    plain = {"metadata": {"name": "web"}, "spec": {"containers": [container()]}}
    host = {"metadata": {"name": "host"}, "spec": {"hostNetwork": True, "containers": [container()]}}
    yield "psa-warn-pod", [label("warn", "restricted"), ("POST", f"{n}/pods", plain)]
    yield "psa-warn-version", [label("warn", "baseline"), label("warn-version", "v1.24"), ("POST", f"{n}/pods", host)]
    yield "psa-warn-deployment", [label("warn", "baseline"), ("POST", "/apis/apps/v1/namespaces/$NS/deployments", {
        "metadata": {"name": "web"}, "spec": {"selector": {"matchLabels": {"app": "web"}},
                                              "template": {"metadata": {"labels": {"app": "web"}}, "spec": host["spec"]}}})]
    yield "psa-enforce-existing", [("POST", f"{n}/pods", host), ("POST", f"{n}/pods", dict(host, metadata={"name": "host2"})),
                                   ("POST", f"{n}/pods", plain), label("enforce", "baseline")]


def discovery(server):
    """Every resource of legacy discovery with what clients read of it, by `group/version/name`."""
    out = {}
    _, core = server.send("GET", "/api/v1")
    docs = [("", "v1", core)]
    _, groups = server.send("GET", "/apis")
    for g in groups.get("groups", []):
        for v in g["versions"]:
            docs.append((g["name"], v["version"], server.send("GET", f"/apis/{v['groupVersion']}")[1]))
    for group, version, doc in docs:
        for r in doc.get("resources", []):
            entry = {k: sorted(r.get(k) or []) for k in ("verbs", "shortNames", "categories")}
            entry.update({k: r.get(k) for k in ("namespaced", "kind", "group", "version")})
            out[f"{group}/{version}/{r['name']}"] = entry
    return out


def run(server):
    results = {}
    everything = list(cases()) + list(pod_security_cases()) + list(quota_cases()) + list(eviction_cases()) \
        + list(pod_security_warn_cases())
    for name, steps in everything:
        ns = "fid-" + "".join(random.choices(string.ascii_lowercase + string.digits, k=6))
        server.send("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
        # A real cluster's controllers make each namespace's `default` account soon after; made
        # here so that no case depends on that race.
        server.send("POST", f"/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "default"}})
        code, body = None, None
        for method, path, body_in in steps:
            if method == "WAIT":
                server.wait(path.replace("$NS", ns), body_in)
                continue
            body_in = json.loads(json.dumps(body_in).replace("$NS", ns)) if body_in is not None else None
            content_type = "application/merge-patch+json" if method == "PATCH" else "application/json"
            if method == "PATCH" and path.endswith("/pods/web") and "containers" in json.dumps(body_in):
                content_type = "application/strategic-merge-patch+json"
            code, body = server.send(method, path.replace("$NS", ns), body_in, content_type)
        results[name] = outcome(code, body, ns, server.warnings)
        server.send("DELETE", f"/api/v1/namespaces/{ns}")
        for cluster_scoped in ("/apis/scheduling.k8s.io/v1/priorityclasses", "/apis/storage.k8s.io/v1/storageclasses",
                               "/apis/networking.k8s.io/v1/ingressclasses", "/api/v1/nodes"):
            server.send("DELETE", f"{cluster_scoped}/fid-{ns}")
            server.send("DELETE", f"{cluster_scoped}/fid-high-{ns}")
    return results


def differences(expected, actual, path=""):
    """Every leaf where `actual` differs from `expected`, as `path: expected -> actual`."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        out = []
        for k in sorted(set(expected) | set(actual)):
            out += differences(expected.get(k, "<absent>"), actual.get(k, "<absent>"), f"{path}.{k}")
        return out
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        out = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            out += differences(e, a, f"{path}[{i}]")
        return out
    return [] if expected == actual else [f"{path}: {json.dumps(expected)} -> {json.dumps(actual)}"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig")
    parser.add_argument("--record")
    parser.add_argument("--compare")
    args = parser.parse_args()
    server = Server(args.kubeconfig)
    results = run(server)
    results["discovery"] = {"code": 200, "object": discovery(server)}
    if args.record:
        # A recording made again keeps what was written by hand about the old one: the version
        # differences, formats and what the sandbox does not serve.
        try:
            with open(args.record) as f:
                kept = {k: v for k, v in json.load(f).items() if k not in ("server", "cases")}
        except FileNotFoundError:
            kept = {"versions": {}}
        recording = dict(kept, server=server.send("GET", "/version")[1].get("gitVersion"), cases=results)
        with open(args.record, "w") as f:
            json.dump(recording, f, indent=1, sort_keys=True)
            f.write("\n")
        print(f"recorded {len(results)} cases")
        return
    with open(args.compare) as f:
        golden = json.load(f)
    explained_by = {}
    for section in ("formats", "not_served", "add_ons"):
        for case, fields in golden.get(section, {}).items():
            explained_by.setdefault(case, {}).update(fields)
    for case, fields in golden.get("versions", {}).items():
        explained_by.setdefault(case, {}).update(fields)
    same, differ, unexplained = 0, 0, 0
    for name, expected in golden["cases"].items():
        found = differences(expected, results.get(name, {}))
        explained = explained_by.get(name, {})
        left = [d for d in found if d.split(":")[0] not in explained]
        if not found:
            same += 1
            continue
        differ += 1
        status = "DIFF" if left else "DIFF (explained)"
        unexplained += bool(left)
        print(f"CASE {name}: {status}")
        for d in found:
            why = explained.get(d.split(":")[0])
            print(f"  {d}" + (f"  [{why}]" if why else ""))
    print(f"builtin kinds: {same} SAME, {differ} DIFF, {unexplained} not explained")
    sys.exit(1 if unexplained else 0)


if __name__ == "__main__":
    main()
