"""xdpvhost's DRA kubelet plugin (driver xdpvhost.io): publishes the
daemon's uplinks as shareable devices, and on NodePrepareResources makes a
per-claim socket directory, adds a vhost-user client port to xdpvhostd over
its control socket and writes the CDI specs and KEP-5304 device metadata
that bring the socket into the VM's pod."""

DRIVER_NAME = "xdpvhost.io"

# No `_created` series beside each counter and histogram (prometheus_client
# reads this when it is first imported, by any module of the plugin): the
# daemon's exposition has none either, and they would double the series.
import os as _os

_os.environ.setdefault("PROMETHEUS_DISABLE_CREATED_SERIES", "True")
