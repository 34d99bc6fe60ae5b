#!/bin/sh
# Installs every Debian 12 package that building, testing, the demo and the
# benchmarks of xdpvhost need. Idempotent: a second run installs nothing new.
set -eu

PACKAGES="
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  clang llvm libclang-rt-14-dev clang-format clang-tidy
  libxdp-dev libbpf-dev libelf-dev zlib1g-dev libmnl-dev
  libboost-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libcli11-dev prometheus-cpp-dev
  libcap-dev libseccomp-dev libsystemd-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  iproute2 iputils-ping ethtool kmod procps psmisc util-linux cpio xz-utils zstd
  dpdk dpdk-dev qemu-system-x86 busybox-static iperf3 tcpdump
  python3 python3-jsonschema python3-matplotlib
  python3-grpcio python3-protobuf python3-kubernetes python3-prometheus-client python3-pylibacl python3-jsonpatch protobuf-compiler protobuf-compiler-grpc
  python3-yaml libvirt-clients libvirt-daemon libvirt-daemon-driver-qemu python3-libvirt podman runc debootstrap
"

# Debian packages of which only a binary is unpacked, under /opt/xdpvhost-tools/PACKAGE
# (apt-get download + dpkg-deb -x), never installed: kubernetes-client's kubectl 1.20
# (the manifests tests render with its built-in kustomize; on these machines another
# package owns /usr/bin/kubectl) and prometheus's promtool (installing the package
# would start a Prometheus server).
UNPACKED="kubernetes-client:usr/bin/kubectl prometheus:usr/bin/promtool"
TOOLS=/opt/xdpvhost-tools

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

for entry in $UNPACKED; do
  pkg=${entry%%:*} file=${entry#*:}
  if [ ! -x "$TOOLS/$pkg/$file" ]; then
    tmp=$(mktemp -d) && chmod 0755 "$tmp"  # readable by apt's _apt user
    (cd "$tmp" && apt-get download -q "$pkg" >/dev/null) || { apt-get update -q && (cd "$tmp" && apt-get download -q "$pkg" >/dev/null); }
    rm -rf "$TOOLS/$pkg" && mkdir -p "$TOOLS/$pkg"
    dpkg-deb -x "$tmp"/"$pkg"_*.deb "$TOOLS/$pkg"
    rm -rf "$tmp"
  fi
done

# Offline schemas for the manifests tests (npm packages kubernetes-models,
# @kubernetes-models/prometheus-operator, @kubevirt-ui-ext/kubevirt-api), pinned
# by tests/kubevirt/manifests/tooling/package-lock.json.
command -v npm >/dev/null 2>&1 || apt-get install -y -q --no-install-recommends nodejs npm
tooling="$(dirname "$0")/../tests/kubevirt/manifests/tooling"
if ! cmp -s "$tooling/package-lock.json" "$tooling/node_modules/.package-lock.json.installed" 2>/dev/null; then
  (cd "$tooling" && npm ci --no-audit --no-fund --loglevel=error) || { echo "bootstrap: npm ci in $tooling failed" >&2; exit 1; }
  cp "$tooling/package-lock.json" "$tooling/node_modules/.package-lock.json.installed"
fi

# The guest kernel for the real-guest suite is taken from Debian's
# linux-image-cloud-amd64 but only unpacked under the build tree (it is never
# installed on this machine: no /boot, no initramfs hooks). tests/guest does it.
echo "bootstrap: all packages present"
