"""Python's `kubernetes` client against the sandbox: list, watch, create, patch, and a conflict.

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

    print(f"python client: {passed} checks passed")


if __name__ == "__main__":
    main(sys.argv[1])
