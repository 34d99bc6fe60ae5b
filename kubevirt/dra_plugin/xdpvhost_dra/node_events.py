"""The plugin's node: its uid (read once: the ResourceSlice's owner and the
Events' object), and Events on it (core/v1, in namespace "default" as the
kubelet makes them for a Node), where `kubectl describe node` and
`kubectl get events` show an operator what the plugin's log says. Events
are best effort: one that cannot be written is logged, never retried."""

import datetime
import logging
import uuid

log = logging.getLogger("xdpvhost-dra.events")

NAMESPACE = "default"  # where Events about cluster-scoped objects go
COMPONENT = "xdpvhost-dra-plugin"
MESSAGE_MAX = 1024  # an Event's message (events.k8s.io/v1: "at most 1kB")


def event_body(node, node_uid, kind, reason, message, now=None):
    """A core/v1 Event about Node `node`; kind is "Normal" or "Warning"."""
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{node}.{uuid.uuid4().hex[:16]}", "namespace": NAMESPACE},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": node_uid},
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
        uid = self.uid()
        if uid is None:
            log.warning("no Event %s on node %s (its uid is not known): %s", reason, self.name, message)
            return
        try:
            self.api.create_event(NAMESPACE, event_body(self.name, uid, kind, reason, message))
        except Exception as e:
            log.warning("no Event %s on node %s: %s", reason, self.name, e)
