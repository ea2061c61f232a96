"""Python's `kubernetes` client against the sandbox: list, watch, create, patch, a conflict, and
the workload kinds' defaults and a service account token read back through its typed models.

Usage: check_sandbox.py KUBECONFIG. Prints one line per check and exits non-zero on the first
failure.
"""

import sys

from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException


def main(kubeconfig: str) -> None:
    config.load_kube_config(config_file=kubeconfig)
    core = client.CoreV1Api()
    passed = 0

    names = [ns.metadata.name for ns in core.list_namespace().items]
    assert "default" in names and "kube-system" in names, names
    print("list: namespaces", names)
    passed += 1

    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="py-cm", labels={"from": "python"}), data={"k": "v1"})
    created = core.create_namespaced_config_map("default", body)
    assert created.metadata.uid and created.metadata.resource_version, created.metadata
    print("create: py-cm at resourceVersion", created.metadata.resource_version)
    passed += 1

    patched = core.patch_namespaced_config_map("py-cm", "default", {"data": {"k": "v2"}})
    assert patched.data["k"] == "v2", patched.data
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)
    print("patch: data.k =", patched.data["k"])
    passed += 1

    events = []
    w = watch.Watch()
    for event in w.stream(core.list_namespaced_config_map, "default", label_selector="from=python",
                          resource_version=created.metadata.resource_version, timeout_seconds=5):
        events.append((event["type"], event["object"].data["k"]))
        if len(events) == 1:
            w.stop()
    assert events == [("MODIFIED", "v2")], events
    print("watch: saw", events)
    passed += 1

    stale = created
    stale.data = {"k": "stale"}
    try:
        core.replace_namespaced_config_map("py-cm", "default", stale)
        raise AssertionError("a stale update must fail")
    except ApiException as e:
        assert e.status == 409, e
        print("conflict: 409 on a stale resourceVersion")
    passed += 1

    apps = client.AppsV1Api()
    batch = client.BatchV1Api()
    container = client.V1Container(name="main", image="busybox:1.36")
    labels = {"app": "py"}
    sts = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="py-db"),
        spec=client.V1StatefulSetSpec(
            service_name="py-db",
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(metadata=client.V1ObjectMeta(labels=labels),
                                              spec=client.V1PodSpec(containers=[container])),
        ),
    )
    made = apps.create_namespaced_stateful_set("default", sts)
    assert made.spec.replicas == 1 and made.spec.pod_management_policy == "OrderedReady", made.spec
    job = client.V1Job(
        metadata=client.V1ObjectMeta(name="py-job"),
        spec=client.V1JobSpec(template=client.V1PodTemplateSpec(
            spec=client.V1PodSpec(containers=[container], restart_policy="Never"))),
    )
    made = batch.create_namespaced_job("default", job)
    assert made.spec.backoff_limit == 6 and made.spec.selector.match_labels, made.spec
    print("workloads: a StatefulSet and a Job read back with their defaults")
    passed += 1

    core.create_namespaced_service_account("default", client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="py-sa")))
    request = client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(audiences=["api"]))
    token = core.create_namespaced_service_account_token("py-sa", "default", request).status.token
    review = client.AuthenticationV1Api().create_token_review(client.V1TokenReview(spec=client.V1TokenReviewSpec(token=token)))
    assert review.status.authenticated and review.status.user.username == "system:serviceaccount:default:py-sa", review.status
    print("token: issued and reviewed for", review.status.user.username)
    passed += 1

    print(f"python client: {passed} checks passed")


if __name__ == "__main__":
    main(sys.argv[1])
