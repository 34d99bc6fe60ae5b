"""THE STAND-IN of this suite: a local HTTP endpoint that answers for the
Kubernetes API server, which cannot run on this machine (Debian 12 ships
none). It is the only thing in the suite that is not the real component.

It serves recorded API objects in the API server's JSON format for the few
REST paths the plugin uses (ResourceClaims and their status, ResourceSlices,
one Node, Pods, KubeVirt's VirtualMachineInstances, Events), answers GET/POST/PUT/PATCH/DELETE the way the API server
does for those (generateName, uid, resourceVersion and optimistic
concurrency, dryRun=All on create, fieldSelector on spec.nodeName/spec.driver, 404 and 409 as
Status objects, list items without kind and apiVersion; ResourceSlices
stored as the server stores them, by its feature gates: apiserver_slices.py;
given the plugin's ClusterRole, every request authorized by it as the API
server's RBAC authorizer does, 403 Forbidden otherwise),
and records every request with its body so the test can
validate what the plugin sent against the resource.k8s.io/v1 OpenAPI
schema. It checks nothing itself: no authentication, admission or
validation — the test does the validating.

The plugin reaches it through the official Kubernetes python client, with
a kubeconfig file written by kubeconfig()."""

import json
import re
import socket
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from apiserver_slices import DEFAULT_GATES, stored_slice
from xvtest import netns as netns_lib

_RESOURCE = re.compile(r"^/apis/(?:resource\.k8s\.io|kubevirt\.io)/v1/(?:namespaces/(?P<ns>[^/]+)/)?"
                       r"(?P<plural>resourceclaims|resourceslices|virtualmachineinstances)"
                       r"(?:/(?P<name>[^/]+))?(?P<sub>/status)?$")
_CORE = re.compile(r"^/api/v1/(?:namespaces/(?P<ns>[^/]+)/)?(?P<plural>nodes|pods)/(?P<name>[^/]+)$")
_EVENTS = re.compile(r"^/api/v1/namespaces/(?P<ns>[^/]+)/(?P<plural>events)(?:/(?P<name>[^/]+))?$")
_KINDS = {"resourceclaims": ("ResourceClaim", "resource.k8s.io/v1"),
          "resourceslices": ("ResourceSlice", "resource.k8s.io/v1"),
          "virtualmachineinstances": ("VirtualMachineInstance", "kubevirt.io/v1"),
          "nodes": ("Node", "v1"), "pods": ("Pod", "v1"), "events": ("Event", "v1")}


def _listening_socket(netns):
    """A TCP socket on 127.0.0.1 (any port), made inside network namespace
    netns, so that a plugin running in that namespace reaches it on its
    loopback."""
    def make():
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        return s
    return netns_lib.in_netns(netns, make)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client that goes away mid-connection (the plugin killed by a
        # test) is no error of the stand-in's.
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class RecordedApiServer:
    # The user the plugin's requests come as (its ServiceAccount).
    USER = "system:serviceaccount:xdpvhost-system:xdpvhost"

    def __init__(self, netns=None, feature_gates=None, cluster_role=None):
        self.feature_gates = dict(DEFAULT_GATES if feature_gates is None else feature_gates)
        self.cluster_role = cluster_role  # None: everything allowed
        self.objects = {}    # (plural, namespace or "", name) -> object
        self.requests = []   # {"method", "path", "query", "body", "status"}
        self.lock = threading.Lock()
        self._rv = 100
        self._socket = _listening_socket(netns)
        self.port = self._socket.getsockname()[1]
        self.httpd = None

    # ---- recorded objects -------------------------------------------------
    def add(self, obj):
        """Stores an object as the API server would hold it."""
        kind = obj["kind"]
        plural = {v[0]: k for k, v in _KINDS.items()}[kind]
        meta = obj.setdefault("metadata", {})
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", "2026-01-01T00:00:00Z")
        with self.lock:
            meta["resourceVersion"] = self._next_rv()
            self.objects[(plural, meta.get("namespace", ""), meta["name"])] = obj
        return obj

    def get(self, plural, name, namespace=""):
        with self.lock:
            obj = self.objects.get((plural, namespace, name))
            return json.loads(json.dumps(obj)) if obj is not None else None

    def remove(self, plural, name, namespace=""):
        with self.lock:
            self.objects.pop((plural, namespace, name), None)

    def of(self, plural):
        with self.lock:
            return [json.loads(json.dumps(o)) for (p, _, _), o in self.objects.items() if p == plural]

    def sent(self, method=None, path_re=None):
        """Requests the plugin made (with bodies), in order."""
        with self.lock:
            return [r for r in self.requests
                    if (method is None or r["method"] == method)
                    and (path_re is None or re.search(path_re, r["path"]))]

    def _next_rv(self):
        self._rv += 1
        return str(self._rv)

    # ---- life cycle -------------------------------------------------------
    def start(self):
        self.httpd = _Server(("127.0.0.1", self.port), self._handler(), bind_and_activate=False)
        self.httpd.socket.close()
        self.httpd.socket = self._socket
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def kubeconfig(self, path):
        """A kubeconfig pointing the client at this endpoint (plain HTTP on
        the loopback of the namespace it listens in)."""
        cfg = {
            "apiVersion": "v1", "kind": "Config", "current-context": "standin",
            "clusters": [{"name": "standin", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}],
            "users": [{"name": "plugin", "user": {"token": "standin-token"}}],
            "contexts": [{"name": "standin", "context": {"cluster": "standin", "user": "plugin"}}],
        }
        with open(path, "w") as f:
            json.dump(cfg, f)  # JSON is YAML
        return path

    # ---- HTTP -------------------------------------------------------------
    def _handler(server):  # noqa: N805 - the server object, closed over
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The headers and the body are two writes on a kept-alive
            # connection: with Nagle's algorithm the body waits for the
            # client's delayed ACK (40 ms a request), which no API server costs.
            disable_nagle_algorithm = True

            def log_message(self, fmt, *args):
                pass

            def _body(self):
                n = int(self.headers.get("Content-Length") or 0)
                if not n:
                    return None
                raw = self.rfile.read(n)
                try:
                    return json.loads(raw)
                except ValueError:
                    return raw.decode(errors="replace")

            def _reply(self, status, obj):
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _status(self, code, reason, message, name="", plural=""):
                return code, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                              "message": message, "reason": reason,
                              "details": {"name": name, "kind": plural}, "code": code}

            def _handle(self, method):
                url = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(url.query).items()}
                body = self._body() if method in ("POST", "PUT", "PATCH") else None
                record = {"method": method, "path": url.path, "query": query, "body": body}
                with server.lock:
                    code, obj = server._serve(self, method, url.path, query, body, record)
                    record["status"] = code
                    server.requests.append(record)
                self._reply(code, obj)

            def do_GET(self):
                self._handle("GET")

            def do_POST(self):
                self._handle("POST")

            def do_PUT(self):
                self._handle("PUT")

            def do_PATCH(self):
                self._handle("PATCH")

            def do_DELETE(self):
                self._handle("DELETE")

        return Handler

    def _serve(self, h, method, path, query, body, record):
        """Runs under self.lock; returns (status, object). A write to a
        stored object records it as it was (record["old"]), as admission
        sees it."""
        m = _RESOURCE.match(path) or _CORE.match(path) or _EVENTS.match(path)
        if not m:
            return h._status(404, "NotFound", f"the server could not find the requested resource ({path})")
        plural, ns, name = m.group("plural"), m.group("ns") or "", m.group("name")
        sub = m.groupdict().get("sub")
        kind, api_version = _KINDS[plural]
        key = (plural, ns, name)
        group = api_version.rpartition("/")[0]
        if not path.startswith(f"/apis/{group}/" if group else "/api/"):
            return h._status(404, "NotFound", f"the server could not find the requested resource ({path})")
        what = f"{plural}.{group}" if group else plural
        verb = _verb(method, name, query)
        resource = plural + ("/status" if sub else "")
        if self.cluster_role is not None and not _allows(self.cluster_role, group, resource, verb, name):
            scope = f'in the namespace "{ns}"' if ns else "at the cluster scope"
            subject = f'{what} "{name}"' if name else what
            return h._status(403, "Forbidden", f'{subject} is forbidden: User "{self.USER}" cannot '
                             f'{verb} resource "{resource}" in API group "{group}" {scope}',
                             name or "", plural)
        if name is None:
            if method == "GET":
                items = [o for (p, n, _), o in self.objects.items() if p == plural and (not ns or n == ns)]
                for sel in filter(None, (query.get("fieldSelector") or "").split(",")):
                    field, _, value = sel.partition("=")
                    keys = field.split(".")
                    def val(o, keys=keys):
                        for k in keys:
                            o = o.get(k) if isinstance(o, dict) else None
                        return o
                    items = [o for o in items if val(o) == value]
                # A list's items carry no kind and apiVersion (the list says it).
                items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
                return 200, {"kind": kind + "List", "apiVersion": api_version,
                             "metadata": {"resourceVersion": str(self._rv)}, "items": items}
            if method == "POST":
                obj = dict(body)
                meta = obj.setdefault("metadata", {})
                if not meta.get("name"):
                    if not meta.get("generateName"):
                        return h._status(422, "Invalid", "metadata.name or generateName is required")
                    meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
                if (plural, ns, meta["name"]) in self.objects:
                    return h._status(409, "AlreadyExists", f'{what} "{meta["name"]}" already exists')
                if plural == "resourceslices":
                    try:
                        stored_slice(obj, None, self.feature_gates)
                    except ValueError as e:
                        return h._status(422, "Invalid", str(e))
                meta["uid"] = str(uuid.uuid4())
                meta["creationTimestamp"] = "2026-01-01T00:00:01Z"
                if query.get("dryRun") == "All":  # every stage but the storing
                    return 201, obj
                meta["resourceVersion"] = self._next_rv()
                self.objects[(plural, ns, meta["name"])] = obj
                return 201, obj
            return h._status(405, "MethodNotAllowed", f"{method} on a collection")
        current = self.objects.get(key)
        if current is None:
            return h._status(404, "NotFound", f'{what} "{name}" not found', name, plural)
        if method != "GET":
            record["old"] = json.loads(json.dumps(current))
        if method == "GET":
            return 200, current
        if method == "DELETE":
            del self.objects[key]
            return 200, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                         "details": {"name": name, "kind": plural, "uid": current["metadata"]["uid"]}}
        if method in ("PUT", "PATCH"):
            if method == "PATCH":
                if not isinstance(body, dict):
                    return h._status(400, "BadRequest", "merge patch body must be an object")
                new = _merge(json.loads(json.dumps(current)), body)
            else:
                new = body
            rv = (new.get("metadata") or {}).get("resourceVersion")
            # A ResourceSlice may be replaced without a resourceVersion
            # (its strategy allows unconditional updates); with one, it must match.
            unconditional = plural == "resourceslices" and not rv
            if method == "PUT" and not unconditional and rv != current["metadata"]["resourceVersion"]:
                return h._status(409, "Conflict", f'Operation cannot be fulfilled on {what} "{name}": '
                                 "the object has been modified; please apply your changes to the latest "
                                 "version and try again", name, plural)
            if sub:  # the status subresource changes only status
                stored = json.loads(json.dumps(current))
                stored["status"] = new.get("status")
            else:
                stored = new
                stored["metadata"]["uid"] = current["metadata"]["uid"]
                stored["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"]
                stored.setdefault("kind", kind)
                stored.setdefault("apiVersion", api_version)
                if plural == "resourceslices":
                    try:
                        stored_slice(stored, current, self.feature_gates)
                    except ValueError as e:
                        return h._status(422, "Invalid", str(e))
                    # Nothing changed: nothing is written, the version stays.
                    stored["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
                    if stored == current:
                        return 200, stored
            stored["metadata"]["resourceVersion"] = self._next_rv()
            self.objects[key] = stored
            return 200, stored
        return h._status(405, "MethodNotAllowed", method)


def _verb(method, name, query):
    """The RBAC verb of a request (k8s.io/apiserver endpoints/request)."""
    if method == "GET":
        if name:
            return "get"
        return "watch" if query.get("watch") in ("true", "1") else "list"
    if method == "DELETE" and not name:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[method]


def _allows(role, group, resource, verb, name):
    """Whether a rule of ClusterRole `role` grants it (RBAC: apiGroups,
    resources, verbs, resourceNames; "*" matches any)."""
    def has(values, value):
        return "*" in values or value in values
    for rule in role.get("rules") or []:
        if (has(rule.get("apiGroups") or [], group) and has(rule.get("resources") or [], resource)
                and has(rule.get("verbs") or [], verb)):
            names = rule.get("resourceNames") or []
            if not names or (name and name in names):
                return True
    return False


def _merge(target, patch):
    """JSON merge patch (RFC 7386)."""
    for k, v in patch.items():
        if v is None:
            target.pop(k, None)
        elif isinstance(v, dict) and isinstance(target.get(k), dict):
            _merge(target[k], v)
        else:
            target[k] = v
    return target
