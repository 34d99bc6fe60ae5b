"""The Python test helpers of xdpvhost, one package for every suite
(tests/control, tests/e2e, tests/dpdk, tests/guest, tests/kubevirt, bench):

  netns            network namespaces, veth pairs, commands run in them
  process          children that die with the test, their logs read back
  waiting          wait_until: poll a condition up to a deadline
  paths            the source root, proto/, binaries of the build tree
  control          the control socket: raw framing, Control, call()
  daemon           xdpvhostd as a child process (Daemon)
  procfs           /proc figures of a process: fds, memory, listeners
  prom             a strict Prometheus text-format parser
  proto            proto/'s JSON Schemas as validators (python3-jsonschema)
  testpmd          dpdk-testpmd command lines; Testpmd, a virtio_user guest
  testpmd_console  dpdk-testpmd driven interactively through a pty
  guest            QEMU test guests (the image of tests/guest) and results

A suite puts tests/pylib on sys.path and imports the modules it needs;
importing the package imports none of them. See tests/pylib/README.md."""
