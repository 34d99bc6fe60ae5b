"""xdpvhost's KubeVirt network binding sidecar: serves KubeVirt's hook API
(Info, and OnDefineDomain of v1alpha3) on a unix socket and rewrites the
libvirt domain so that each interface bound to it is a vhost-user NIC on the
socket the xdpvhost.io DRA driver prepared for the VM's claim."""

DRIVER_NAME = "xdpvhost.io"
DEFAULT_BINDING_NAME = "vhostuser"
# A name of its own: the upstream vhostuser sidecar's is vhostuser.sock, and
# virt-launcher counts the sidecars' sockets by file name, so two sidecars of
# one VM must not share one (kubevirt/INTERFACES.md).
DEFAULT_HOOK_SOCKET = "/var/run/kubevirt-hooks/xdpvhost.sock"
# Where the container runtime mounts KEP-5304 device metadata
# (kubevirt/INTERFACES.md, Paths and names).
DEFAULT_METADATA_ROOT = "/var/run/kubernetes.io/dra-device-attributes"
# The DRA plugin's directory convention inside the VM's pod:
#   <container root>/<podClaimName>/<request>/vhost.sock
DEFAULT_CONTAINER_SOCKET_ROOT = "/var/run/xdpvhost"
SOCKET_FILE_NAME = "vhost.sock"
# The MTU the DRA plugin gives a port when its uplink says nothing else.
DEFAULT_MTU = 1500
