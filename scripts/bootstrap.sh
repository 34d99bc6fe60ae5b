#!/bin/sh
# Installs every Debian 12 package that building, testing, the demo and the
# benchmarks of xdpvhost need. Idempotent: a second run installs nothing new.
set -eu

PACKAGES="
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang llvm libclang-rt-14-dev clang-format clang-tidy
  libxdp-dev libbpf-dev libelf-dev zlib1g-dev libmnl-dev
  libboost-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev prometheus-cpp-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  iproute2 iputils-ping ethtool kmod procps psmisc util-linux cpio xz-utils zstd
  dpdk dpdk-dev qemu-system-x86 busybox-static iperf3 tcpdump
  python3 python3-jsonschema python3-matplotlib
  python3-grpcio python3-protobuf python3-kubernetes python3-selinux protobuf-compiler protobuf-compiler-grpc
"

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

if [ -n "$missing" ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # shellcheck disable=SC2086
  apt-get install -y -q --no-install-recommends $missing
fi

# The guest kernel for the real-guest suite is taken from Debian's
# linux-image-cloud-amd64 but only unpacked under the build tree (it is never
# installed on this machine: no /boot, no initramfs hooks). tests/guest does it.
echo "bootstrap: all packages present"
