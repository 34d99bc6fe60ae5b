"""The one error the sidecar reports back to virt-launcher."""


class BindingError(Exception):
    """The VMI or the device metadata does not allow a vhost-user interface;
    OnDefineDomain fails with this message (the VM does not start)."""
