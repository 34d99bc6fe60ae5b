"""The DRA plugin's ValidatingAdmissionPolicies
(deploy/kubernetes/base/admission-policy.yaml), applied to requests as the
API server's admission applies them: through
tests/kubevirt/manifests/check_policies.mjs, the named stand-in for that
admission around a real CEL evaluator (its npm tooling installed by
scripts/bootstrap.sh)."""

import json
import os
import subprocess
import tempfile

import yaml

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
POLICY_FILE = os.path.join(ROOT, "deploy", "kubernetes", "base", "admission-policy.yaml")
CHECKER = os.path.join(ROOT, "tests", "kubevirt", "manifests", "check_policies.mjs")
PLUGIN_USER = "system:serviceaccount:xdpvhost-system:xdpvhost"


def plugin_user(node):
    """The plugin's user info as the API server has it for a token bound to
    its pod on `node` (ServiceAccountTokenPodNodeInfo); node None: a token
    bound to no pod."""
    extra = {"authentication.kubernetes.io/pod-name": ["xdpvhost-dra-plugin-x7k2p"],
             "authentication.kubernetes.io/pod-uid": ["6f1c1e9e-6a43-4f0e-9d55-2b8b1b0ec0a1"]}
    if node is not None:
        extra["authentication.kubernetes.io/node-name"] = [node]
        extra["authentication.kubernetes.io/node-uid"] = ["0d4a0f2e-0f5e-4f7a-8f3e-7e2e6f1b9c3d"]
    return {"username": PLUGIN_USER, "uid": "3b1f0c58-5a8d-4c52-8d3c-1e9a1c7b6d10",
            "groups": ["system:serviceaccounts", "system:serviceaccounts:xdpvhost-system",
                       "system:authenticated"],
            "extra": extra}


def load(objects=None):
    """(policies, bindings) of `objects` (rendered manifests), or of the
    base's policy file."""
    if objects is None:
        with open(POLICY_FILE) as f:
            objects = [o for o in yaml.safe_load_all(f) if o]
    return ([o for o in objects if o["kind"] == "ValidatingAdmissionPolicy"],
            [o for o in objects if o["kind"] == "ValidatingAdmissionPolicyBinding"])


def verdicts(requests, objects=None):
    """{request name: "allowed" | "denied by <policy>: <message>"} for
    requests {name, operation, userInfo, group, version, resource,
    subResource, object, oldObject}."""
    policies, bindings = load(objects)
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump({"policies": policies, "bindings": bindings, "requests": requests}, f)
        f.flush()
        r = subprocess.run(["node", CHECKER, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"check_policies.mjs: {r.stderr}")
    out = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    if len(out) != len(requests):
        raise RuntimeError(f"check_policies.mjs answered {len(out)} of {len(requests)}: {r.stdout}")
    return out
