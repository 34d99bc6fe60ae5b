"""The plugin's node: its uid (read once: the ResourceSlice's owner and the
Events' object), and Events (core/v1) on it, in namespace "default" as the
kubelet makes them for a Node, or on a pod of a VM, in the pod's namespace:
where `kubectl describe` and `kubectl get events` show an operator what the
plugin's log says. Events are best effort: one that cannot be written is
logged, never retried."""

import datetime
import logging
import uuid

log = logging.getLogger("xdpvhost-dra.events")

NAMESPACE = "default"  # where Events about cluster-scoped objects go
COMPONENT = "xdpvhost-dra-plugin"
MESSAGE_MAX = 1024  # an Event's message (events.k8s.io/v1: "at most 1kB")
NAME_MAX = 253  # an Event's name is a DNS-1123 subdomain
SUFFIX_HEX = 16  # "<object>.<16 hex digits>", as the kubelet's recorder names them


def event_name(about_name):
    """`<object>.<random>` within NAME_MAX: an object's own name may already
    be 253 characters long (a Node's, a pod's), so it is cut to leave room for
    the suffix, and a cut that ends in '.' or '-' is trimmed to stay a valid
    subdomain."""
    base = about_name[:NAME_MAX - 1 - SUFFIX_HEX].rstrip(".-")
    return f"{base}.{uuid.uuid4().hex[:SUFFIX_HEX]}"


def event_body(node, about, kind, reason, message, now=None):
    """A core/v1 Event reported from `node` about object `about` (its
    apiVersion, kind, name, uid, and namespace for a namespaced one); kind is
    "Normal" or "Warning"."""
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": event_name(about["name"]),
                     "namespace": about.get("namespace") or NAMESPACE},
        "involvedObject": about,
        "type": kind, "reason": reason, "message": message[:MESSAGE_MAX],
        "source": {"component": COMPONENT, "host": node},
        "reportingComponent": COMPONENT, "reportingInstance": node,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }


class Node:
    def __init__(self, api, name):
        self.api = api
        self.name = name
        self._uid = None

    def uid(self):
        """The Node's uid, or None (logged) while it cannot be read."""
        if self._uid is None:
            try:
                self._uid = self.api.node_uid(self.name)
            except Exception as e:
                log.warning("node %s: %s", self.name, e)
        return self._uid

    def event(self, kind, reason, message):
        """An Event on this Node."""
        uid = self.uid()
        if uid is None:
            log.warning("no Event %s on node %s (its uid is not known): %s", reason, self.name, message)
            return
        self._post({"apiVersion": "v1", "kind": "Node", "name": self.name, "uid": uid},
                   kind, reason, message)

    def pod_event(self, namespace, name, uid, kind, reason, message):
        """An Event on pod namespace/name (uid)."""
        self._post({"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name, "uid": uid},
                   kind, reason, message)

    def _post(self, about, kind, reason, message):
        body = event_body(self.name, about, kind, reason, message)
        try:
            self.api.create_event(body["metadata"]["namespace"], body)
        except Exception as e:
            log.warning("no Event %s on %s %s: %s", reason, about["kind"], about["name"], e)
