"""The few Kubernetes API calls the plugin makes, through the official
python client (python3-kubernetes). Debian's client (22.x) has no typed
classes for resource.k8s.io/v1, so ResourceClaims and ResourceSlices go
through CustomObjectsApi (plain JSON objects at the API group's REST
paths), as do KubeVirt's VirtualMachineInstances; Nodes through CoreV1Api, as are
the Events the plugin reports. It reads no Pod (launcher.py says why)."""

import json
import logging

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

GROUP, VERSION = "resource.k8s.io", "v1"
KUBEVIRT_GROUP, KUBEVIRT_VERSION = "kubevirt.io", "v1"
TIMEOUT = 10  # seconds per request (the kubelet gives a prepare call 45)

log = logging.getLogger("xdpvhost-dra.api")


class ApiError(RuntimeError):
    def __init__(self, what, status, reason):
        self.status = status
        super().__init__(f"{what}: {reason}")


def _error(what, e):
    if isinstance(e, ApiException):
        reason = e.reason or ""
        body = e.body.decode(errors="replace") if isinstance(e.body, bytes) else (e.body or "")
        try:
            message = json.loads(body).get("message")
            if message:
                reason = f"{reason}: {message}" if reason else message
        except (ValueError, AttributeError):
            pass
        return ApiError(what, e.status, f"API server answered {e.status} {reason}".rstrip())
    return ApiError(what, None, f"API server unreachable: {e}")


class KubeApi:
    def __init__(self, kubeconfig=None):
        cfg = client.Configuration()
        if kubeconfig:
            config.load_kube_config(config_file=kubeconfig, client_configuration=cfg,
                                    persist_config=False)
            log.info("API server %s (kubeconfig %s)", cfg.host, kubeconfig)
        else:
            config.load_incluster_config(client_configuration=cfg)
            log.info("API server %s (in-cluster service account)", cfg.host)
        self.api_client = client.ApiClient(cfg)
        self.custom = client.CustomObjectsApi(self.api_client)
        self.core = client.CoreV1Api(self.api_client)

    def _do(self, what, fn, *args, **kwargs):
        try:
            return fn(*args, _request_timeout=TIMEOUT, **kwargs)
        except Exception as e:  # ApiException, urllib3 errors, OSError
            raise _error(what, e) from e

    # ResourceClaims (namespaced)
    def get_claim(self, namespace, name):
        return self._do(f"GET resourceclaim {namespace}/{name}", self.custom.get_namespaced_custom_object,
                        GROUP, VERSION, namespace, "resourceclaims", name)

    def replace_claim_status(self, namespace, name, body):
        return self._do(f"PUT resourceclaim {namespace}/{name}/status",
                        self.custom.replace_namespaced_custom_object_status,
                        GROUP, VERSION, namespace, "resourceclaims", name, body)

    # ResourceSlices (cluster-scoped)
    def list_slices(self, node, driver):
        result = self._do("LIST resourceslices", self.custom.list_cluster_custom_object,
                          GROUP, VERSION, "resourceslices",
                          field_selector=f"spec.nodeName={node},spec.driver={driver}")
        return result.get("items") or []

    def create_slice(self, body, dry_run=False):
        """dry_run: the server answers with what it would store, and stores
        nothing (every stage of the request runs: its feature gates too)."""
        return self._do("POST resourceslice" + (" (dry run)" if dry_run else ""),
                        self.custom.create_cluster_custom_object, GROUP, VERSION, "resourceslices",
                        body, dry_run="All" if dry_run else None)

    def replace_slice(self, name, body):
        return self._do(f"PUT resourceslice {name}", self.custom.replace_cluster_custom_object,
                        GROUP, VERSION, "resourceslices", name, body)

    def delete_slice(self, name):
        return self._do(f"DELETE resourceslice {name}", self.custom.delete_cluster_custom_object,
                        GROUP, VERSION, "resourceslices", name)

    # Core objects
    def node_uid(self, name):
        return self._do(f"GET node {name}", self.core.read_node, name).metadata.uid

    def create_event(self, namespace, body):
        return self._do(f"POST event {namespace}/{body['metadata']['name']}",
                        self.core.create_namespaced_event, namespace, body)

    # KubeVirt (namespaced)
    def vmi(self, namespace, name):
        return self._do(f"GET virtualmachineinstance {namespace}/{name}",
                        self.custom.get_namespaced_custom_object, KUBEVIRT_GROUP, KUBEVIRT_VERSION,
                        namespace, "virtualmachineinstances", name)

    def vmis(self, namespace):
        result = self._do(f"LIST virtualmachineinstances {namespace}", self.custom.list_namespaced_custom_object,
                          KUBEVIRT_GROUP, KUBEVIRT_VERSION, namespace, "virtualmachineinstances")
        return result.get("items") or []
