"""Helpers shared by xdpvhost's Python test suites: the daemon under test,
its control socket, DPDK testpmd frontends and network namespaces."""
