#!/bin/bash
# Builds the test guest for the real-guest suite from Debian packages:
#   OUTDIR/vmlinuz       kernel of linux-image-<ver>-cloud-amd64 (never installed here)
#   OUTDIR/initrd.img    busybox initramfs: virtio modules, iperf3, ethtool, /init
#   OUTDIR/image.stamp   what was built from which package versions (JSON)
# Usage: build_image.sh OUTDIR
# Idempotent: when the stamp matches the current inputs (package versions, the
# files of tests/guest that go into the image) nothing is done. Concurrent runs
# on one OUTDIR serialise on OUTDIR/.lock.
# Environment:
#   XV_GUEST_KERNEL_DEB  use this linux-image-*-cloud-amd64 .deb instead of
#                        apt-get download (offline builds)
#   XV_GUEST_FORCE=1     rebuild even if up to date
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
OUT=$(cd "$1" && pwd)

exec 9>"$OUT/.lock"
flock 9

log() { echo "build_image: $*" >&2; }

pkg_version() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo missing; }

for tool in busybox iperf3 ethtool cpio depmod; do
  command -v "$tool" > /dev/null || { log "missing $tool (run scripts/bootstrap.sh)"; exit 1; }
done
BUSYBOX=/bin/busybox
# busybox-static: the only binary of the guest that needs no libraries.
if [ ! -x "$BUSYBOX" ] || ldd "$BUSYBOX" > /dev/null 2>&1; then
  log "$BUSYBOX is not a static busybox (install busybox-static)"; exit 1
fi

# --- which kernel ------------------------------------------------------------
META=linux-image-cloud-amd64
if [ -n "${XV_GUEST_KERNEL_DEB:-}" ]; then
  KDEB_SRC=$(realpath "$XV_GUEST_KERNEL_DEB")
  KPKG=$(dpkg-deb -f "$KDEB_SRC" Package)
  KVER_DEB=$(dpkg-deb -f "$KDEB_SRC" Version)
else
  KDEB_SRC=
  KPKG=$(apt-cache depends "$META" 2>/dev/null |
         awk '/Depends: linux-image-[0-9].*-cloud-amd64/ { print $2; exit }')
  if [ -z "$KPKG" ]; then
    log "cannot resolve $META's kernel package (apt-get update?)"
    exit 1
  fi
  KVER_DEB=$(apt-cache policy "$KPKG" | awk '/Candidate:/ { print $2 }')
fi

SRC_HASH=$(cat "$HERE/build_image.sh" "$HERE/init.sh" "$HERE/xv-lib.sh" "$HERE/xv.sh" |
           sha256sum | cut -c1-16)
KEY="kernel=$KPKG/$KVER_DEB busybox=$(pkg_version busybox-static) iperf3=$(pkg_version iperf3)"
KEY="$KEY libiperf0=$(pkg_version libiperf0) ethtool=$(pkg_version ethtool)"
KEY="$KEY libc6=$(pkg_version libc6) libssl3=$(pkg_version libssl3) src=$SRC_HASH"

if [ -z "${XV_GUEST_FORCE:-}" ] && [ -f "$OUT/image.stamp" ] && [ -f "$OUT/vmlinuz" ] &&
   [ -f "$OUT/initrd.img" ] && grep -qF "\"key\": \"$KEY\"" "$OUT/image.stamp"; then
  log "up to date ($OUT)"
  exit 0
fi

T0=$(date +%s.%N)
log "building into $OUT ($KEY)"

# --- kernel .deb: download and unpack (not installed) -------------------------
mkdir -p "$OUT/debs"
if [ -n "$KDEB_SRC" ]; then
  KDEB=$KDEB_SRC
else
  KDEB=$OUT/debs/${KPKG}_${KVER_DEB//:/%3a}_amd64.deb
  if [ ! -f "$KDEB" ]; then
    log "apt-get download $KPKG=$KVER_DEB"
    (cd "$OUT/debs" && apt-get download -q "$KPKG=$KVER_DEB" 2>&1 |
       grep -v '^W: Download is performed unsandboxed' >&2) || true
    [ -f "$KDEB" ] || { log "download of $KPKG=$KVER_DEB failed"; exit 1; }
    for old in "$OUT"/debs/linux-image-*.deb; do
      [ "$old" = "$KDEB" ] || rm -f "$old"
    done
  fi
fi
rm -rf "$OUT/rootfs-kernel"
mkdir -p "$OUT/rootfs-kernel"
dpkg-deb -x "$KDEB" "$OUT/rootfs-kernel"
KREL=$(basename "$(find "$OUT/rootfs-kernel/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -n1)")
MODDIR=$OUT/rootfs-kernel/lib/modules/$KREL
[ -f "$OUT/rootfs-kernel/boot/vmlinuz-$KREL" ] || { log "no vmlinuz-$KREL in $KDEB"; exit 1; }
# The .deb ships no modules.dep (its postinst runs depmod): make one in the
# unpacked tree only.
depmod -b "$OUT/rootfs-kernel" "$KREL"

# --- module load order from modules.dep --------------------------------------
# Each wanted module is loaded after everything it depends on (depth first).
WANTED="virtio_net virtio_pci"
# shellcheck disable=SC2086 # a list of names
ORDER=$(python3 - "$MODDIR/modules.dep" $WANTED <<'EOF'
import os, re, sys
dep_file, wanted = sys.argv[1], sys.argv[2:]
deps, by_name = {}, {}
for line in open(dep_file):
    if ':' not in line:
        continue
    mod, rest = line.split(':', 1)
    deps[mod] = rest.split()
    by_name[re.sub(r'\.ko(\.(xz|zst|gz))?$', '', os.path.basename(mod)).replace('-', '_')] = mod
order, seen = [], set()
def visit(mod):
    if mod in seen:
        return
    seen.add(mod)
    for d in reversed(deps.get(mod, [])):   # modules.dep lists the deepest last
        visit(d)
    order.append(mod)
for name in wanted:
    if name not in by_name:
        sys.exit(f"module {name} not in modules.dep (built in?)")
    visit(by_name[name])
print("\n".join(order))
EOF
)

# --- initramfs tree ------------------------------------------------------------
ROOT=$OUT/initramfs-root
rm -rf "$ROOT"
mkdir -p "$ROOT"/{bin,sbin,dev,proc,sys,tmp,run,etc,usr/bin,usr/sbin,lib/xv/modules}
cp "$BUSYBOX" "$ROOT/bin/busybox"
ln -s busybox "$ROOT/bin/sh"
install -m 0755 "$HERE/init.sh" "$ROOT/init"
install -m 0755 "$HERE/xv.sh" "$ROOT/lib/xv/xv"
install -m 0644 "$HERE/xv-lib.sh" "$ROOT/lib/xv/xv-lib.sh"
ln -s /lib/xv/xv "$ROOT/bin/xv"
mknod -m 600 "$ROOT/dev/console" c 5 1 2>/dev/null || true
mknod -m 666 "$ROOT/dev/null" c 1 3 2>/dev/null || true
echo "root:x:0:0:root:/:/bin/sh" > "$ROOT/etc/passwd"

: > "$ROOT/lib/xv/modules.order"
MODLIST=
for mod in $ORDER; do
  base=$(basename "$mod")
  case "$base" in
    *.ko.xz)  xz -dc "$MODDIR/$mod" > "$ROOT/lib/xv/modules/${base%.xz}"; base=${base%.xz} ;;
    *.ko.zst) zstd -qdc "$MODDIR/$mod" > "$ROOT/lib/xv/modules/${base%.zst}"; base=${base%.zst} ;;
    *.ko.gz)  gzip -dc "$MODDIR/$mod" > "$ROOT/lib/xv/modules/${base%.gz}"; base=${base%.gz} ;;
    *)        cp "$MODDIR/$mod" "$ROOT/lib/xv/modules/$base" ;;
  esac
  echo "$base" >> "$ROOT/lib/xv/modules.order"
  MODLIST="$MODLIST${MODLIST:+, }\"${base%.ko}\""
done

# Dynamically linked tools with their libraries and the loader, at the paths
# ldd names (Debian's ld.so searches the multiarch dirs by default).
copy_with_libs() {
  local bin=$1 dest=$2
  install -m 0755 "$bin" "$ROOT$dest"
  ldd "$bin" | awk '/=> \// { print $3 } /^[[:space:]]*\/[^ ]*ld-linux/ { print $1 }' |
  while read -r lib; do
    [ -e "$ROOT$lib" ] && continue
    mkdir -p "$ROOT$(dirname "$lib")"
    cp -L "$lib" "$ROOT$lib"
  done
}
copy_with_libs "$(command -v iperf3)" /usr/bin/iperf3
copy_with_libs "$(command -v ethtool)" /usr/sbin/ethtool

# Uncompressed newc cpio: nothing to inflate in a TCG guest.
(cd "$ROOT" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet) > "$OUT/initrd.img.tmp"
mv "$OUT/initrd.img.tmp" "$OUT/initrd.img"
cp "$OUT/rootfs-kernel/boot/vmlinuz-$KREL" "$OUT/vmlinuz.tmp"
mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"

T1=$(date +%s.%N)
BUILD_S=$(awk -v a="$T0" -v b="$T1" 'BEGIN { printf "%.1f", b - a }')
cat > "$OUT/image.stamp.tmp" <<EOF
{
  "key": "$KEY",
  "kernel_package": "$KPKG",
  "kernel_package_version": "$KVER_DEB",
  "kernel_release": "$KREL",
  "kernel_deb": "$(basename "$KDEB")",
  "modules": [$MODLIST],
  "busybox_static": "$(pkg_version busybox-static)",
  "iperf3": "$(pkg_version iperf3)",
  "ethtool": "$(pkg_version ethtool)",
  "libc6": "$(pkg_version libc6)",
  "initrd_bytes": $(stat -c %s "$OUT/initrd.img"),
  "build_seconds": $BUILD_S,
  "built_at": "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
}
EOF
mv "$OUT/image.stamp.tmp" "$OUT/image.stamp"
log "built $KREL initramfs ($(stat -c %s "$OUT/initrd.img") bytes) in ${BUILD_S}s"
