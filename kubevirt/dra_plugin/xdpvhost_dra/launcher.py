"""The VM that a claim's pod runs, found without reading the pod.

The plugin may not read pods (deploy/kubernetes/base/rbac.yaml): a
cluster-wide `pods get` would let it read every tenant's pod specs. It needs
only the VM that the pod runs. The claim names the pod (status.reservedFor:
its name and UID), and KubeVirt records its pods on the VMI:

- virt-controller creates the launcher pod of VMI <vm> with generateName
  "virt-launcher-<vm>-", so the pod's name gives the VMI's name. The API
  server cuts a generateName to 58 characters before it adds 5 random
  ones. So when a VM's name is longer than 43 characters, the pod's name
  (63 characters) holds only the start of it, and that VMI is found by a
  list of the namespace's VMIs.
- The VMI's status.activePods maps the UID of each of its pods (two during
  a migration) to the node that runs it. This proves that the pod is that
  VMI's and runs here. virt-controller writes the entry once the pod is
  scheduled, which can be a moment after the kubelet asks for the claim,
  so a missing entry is waited for (WAIT_S) before the lookup fails.

A pod whose name does not start with virt-launcher- runs no VM (a DPDK
pod, say): it has no VM name and no VMI."""

import time

from . import names
from .kube_api import ApiError

PREFIX = "virt-launcher-"
GENERATED_MAX = 58  # k8s.io/apiserver SimpleNameGenerator: maxGeneratedNameLength
RANDOM_LEN = 5      # ... and randomLength
WAIT_S = 5.0
POLL_S = 0.2


class LauncherError(RuntimeError):
    """The pod is named as a VMI's launcher, but no VMI of its namespace
    lists it as its pod on this node (yet)."""


def name_prefix(pod_name):
    """What the pod's name says about its VMI's name: (start, whole), where
    whole tells whether start is the entire name (False when the API server
    may have cut it). None for a pod not named as a launcher."""
    if not pod_name.startswith(PREFIX) or len(pod_name) <= len(PREFIX) + 1 + RANDOM_LEN:
        return None
    base = pod_name[len(PREFIX):-RANDOM_LEN]  # "<vm>-", or its first characters
    if len(pod_name) < GENERATED_MAX + RANDOM_LEN:
        return (base[:-1], True) if base.endswith("-") else None
    return base, False


def active_node(vmi, pod_uid):
    """The node that the VMI's status.activePods gives for the pod, or None."""
    pods = (vmi.get("status") or {}).get("activePods") or {}
    node = pods.get(pod_uid) if isinstance(pods, dict) else None
    return node if isinstance(node, str) else None


def find(api, namespace, pod_name, pod_uid, node, *, wait_s=WAIT_S, sleep=time.sleep, clock=time.monotonic):
    """(VM name, VMI object) of the launcher pod `pod_name` (UID `pod_uid`)
    on `node`; ("", None) for a pod not named as a launcher. Raises
    LauncherError when no VMI lists the pod on this node within wait_s, and
    ApiError when the API server cannot answer."""
    prefix = name_prefix(pod_name)
    if prefix is None:
        return "", None
    deadline = clock() + wait_s
    while True:
        vmi = _lookup(api, namespace, prefix, pod_uid)
        if vmi is not None and active_node(vmi, pod_uid) == node:
            return vmi["metadata"]["name"], vmi
        if clock() >= deadline:
            break
        sleep(POLL_S)
    if vmi is None:
        what = (f"VMI {namespace}/{prefix[0]} does not exist" if prefix[1] else
                f"no VMI of namespace {namespace} whose name starts with {prefix[0]!r} lists the pod")
    else:
        what = (f"VMI {namespace}/{vmi['metadata']['name']} lists it on node "
                f"{active_node(vmi, pod_uid)!r}, not {node!r}" if active_node(vmi, pod_uid) else
                f"VMI {namespace}/{vmi['metadata']['name']} does not list it among its pods "
                "(status.activePods)")
    raise LauncherError(f"pod {namespace}/{pod_name} (UID {pod_uid}) is named as a virt-launcher pod, "
                        f"but {what} after {wait_s:g} s")


def _lookup(api, namespace, prefix, pod_uid):
    """The VMI that the pod's name points to: by name when the name is whole,
    else (a cut name) the namespace's VMI whose name starts with it and that
    lists the pod. None when there is none."""
    start, whole = prefix
    if whole or start.endswith("-"):  # a cut name may still be whole ("<vm>-" exactly 44 characters)
        try:
            vmi = api.vmi(namespace, names.dns_subdomain("VMI name", start if whole else start[:-1]))
            if whole or active_node(vmi, pod_uid):
                return vmi
        except names.InvalidName:
            return None
        except ApiError as e:
            if e.status != 404:
                raise
            if whole:
                return None
    matches = [v for v in api.vmis(namespace)
               if (str((v.get("metadata") or {}).get("name")) + "-").startswith(start)
               and active_node(v, pod_uid)]
    return matches[0] if len(matches) == 1 else None
