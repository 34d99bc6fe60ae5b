"""The plugin's metrics: every name and label value in this file, in one
registry (python3-prometheus-client), served by metrics_server.py.

Series are made at start for every label value they can take, so that a
rate() over them starts at 0 instead of at the first error."""

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

CALLS = ("prepare", "unprepare")
RESULTS = ("ok", "error")
# Why a call failed (claim_driver.reason_of).
REASONS = ("invalid_request",     # a name or UID from the kubelet that is not one
           "claim",               # the claim's allocation or config (claim_plan)
           "vmi",                 # the VM's VMI cannot be read or was replaced
           "mac",                 # the VMI's interface gives no usable MAC
           "api_server",          # the API server refused or did not answer
           "daemon_unavailable",  # xdpvhostd's control socket does not answer
           "daemon_refused",      # xdpvhostd refused the port
           "socket_dir",          # the claim's socket directory
           "filesystem",          # state, CDI or metadata files
           "internal")            # a bug: logged with its traceback
# What a reconcile pass put back.
REPAIRS = ("port", "socket_dir", "metadata", "cdi_spec")
SLICE_WRITES = ("created", "updated")

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 45)

call_seconds = Histogram(
    "xdpvhost_dra_call_seconds",
    "NodePrepareResources and NodeUnprepareResources, per claim: how long each took, by result "
    "(the kubelet gives a call 45 s)",
    ["call", "result"], buckets=_LATENCY_BUCKETS, registry=REGISTRY)
call_errors = Counter(
    "xdpvhost_dra_call_errors",
    "Prepare and unprepare calls that failed for a claim, by why",
    ["call", "reason"], registry=REGISTRY)
prepared_claims = Gauge(
    "xdpvhost_dra_prepared_claims", "Claims prepared on this node (state files)", registry=REGISTRY)
reconcile_repairs = Counter(
    "xdpvhost_dra_reconcile_repairs",
    "What reconcile passes had to put back for prepared claims (a restarted daemon's ports, a "
    "removed directory or file)", ["what"], registry=REGISTRY)
reconcile_failures = Counter(
    "xdpvhost_dra_reconcile_failures", "Prepared claims a reconcile pass could not put back",
    registry=REGISTRY)
claims_without_socket = Gauge(
    "xdpvhost_dra_claims_without_socket",
    "Prepared claims whose VM's vhost-user socket did not appear in its directory although the "
    "VM's container runs: the runtime did not mount the directory (CDI devices not applied)",
    registry=REGISTRY)
slice_writes = Counter(
    "xdpvhost_dra_slice_writes", "Writes of this node's ResourceSlice", ["action"], registry=REGISTRY)
slice_errors = Counter(
    "xdpvhost_dra_slice_errors",
    "Reconcile passes that could not bring the ResourceSlice in sync (daemon or API server)",
    registry=REGISTRY)
slice_dropped_fields = Gauge(
    "xdpvhost_dra_slice_dropped_fields",
    "Fields of the plugin's ResourceSlice the API server does not keep, by field and the feature "
    "gate that would keep it (the number of devices that lost it)", ["field", "gate"], registry=REGISTRY)
device_mode = Gauge(
    "xdpvhost_dra_device_mode", "The device mode published: 1 for the current one",
    ["mode"], registry=REGISTRY)

for _call in CALLS:
    for _result in RESULTS:
        call_seconds.labels(_call, _result)
    for _reason in REASONS:
        call_errors.labels(_call, _reason)
for _what in REPAIRS:
    reconcile_repairs.labels(_what)
for _action in SLICE_WRITES:
    slice_writes.labels(_action)


def set_dropped_fields(dropped, gate_of):
    """dropped: "device.field" paths; gate_of(path) -> the gate's name."""
    counts = {}
    for path in dropped:
        field = path.split(".", 1)[1] if "." in path else path
        key = (field, gate_of(path))
        counts[key] = counts.get(key, 0) + 1
    slice_dropped_fields.clear()
    for (field, gate), n in counts.items():
        slice_dropped_fields.labels(field, gate).set(n)


def set_device_mode(mode, modes):
    for m in modes:
        device_mode.labels(m).set(1 if m == mode else 0)
