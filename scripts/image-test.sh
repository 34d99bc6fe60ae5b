#!/bin/sh
# Builds the xdpvhost images for real with podman, from Debian 12 packages
# only, and starts them. Not part of CI (.ci/run): a full run takes about
# 15-25 minutes on 2 cores, most of it compiling the daemon in the build
# stage. CI checks the runtime stage's package list against ldd instead
# (tests/kubevirt/image).
#
#   sudo scripts/image-test.sh [--ref GIT-REF | --context DIR] [--keep]
#
# 1. The base image localhost/xdpvhost/debian:12 is made once, locally (no
#    registry is reachable): debootstrap --variant=minbase bookworm, then
#    podman import. It is kept for later runs.
# 2. The build context is the work tree's files (git ls-files: tracked and
#    untracked, not ignored), or GIT-REF's tree (git archive), or DIR.
# 3. podman build of deploy/Dockerfile: targets runtime
#    (localhost/xdpvhost:dev) and sidecar (localhost/xdpvhost-sidecar:dev);
#    time and size are printed.
# 4. Checks, each PASS or FAIL:
#    - every library of xdpvhostd and xdpvhostctl resolves in the image;
#    - xdpvhostd starts as uid 10001 with exactly NET_ADMIN, NET_RAW,
#      IPC_LOCK and SYS_ADMIN (its file capabilities; podman's default
#      seccomp profile) and answers
#      `xdpvhostctl status`, `xdpvhostctl health` and /healthz;
#    - with an uplink on a veth pair in network namespaces of this script's
#      own (xvimg-*), it attaches XDP and binds AF_XDP as that user, detaches
#      at stop, and does both again when started a second time;
#    - without those capabilities it does not start (exec is refused);
#    - SIGTERM (podman stop) ends it with status 0;
#    - the DRA plugin runs (--help) and loads its gRPC stubs;
#    - the sidecar image serves KubeVirt's hook Info on a unix socket as uid 107.
#    Containers, namespaces and temporary files are removed at the end, also
#    on failure; the images are kept (--keep keeps the containers' work dir too).
# Last line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
BASE=localhost/xdpvhost/debian:12
IMAGE=localhost/xdpvhost:dev
SIDECAR=localhost/xdpvhost-sidecar:dev
MIRROR=${XDPVHOST_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CAPS="NET_ADMIN,NET_RAW,IPC_LOCK,SYS_ADMIN"
ref="" context="" keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ref) ref=$2; shift 2 ;;
    --context) context=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) echo "usage: $0 [--ref GIT-REF | --context DIR] [--keep]" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "image-test: needs root (podman, network namespaces)" >&2; exit 2; }
for tool in podman runc debootstrap ip; do
  command -v $tool >/dev/null || { echo "image-test: $tool missing (scripts/bootstrap.sh installs it)" >&2; exit 2; }
done

work=$(mktemp -d /var/tmp/xdpvhost-image-test.XXXXXX)
passed=0 failed=0
cleanup() {
  podman rm -f -t 0 xvimg-daemon xvimg-uplink xvimg-sidecar >/dev/null 2>&1
  ip netns del xvimg-node 2>/dev/null
  ip netns del xvimg-peer 2>/dev/null
  [ $keep = 1 ] && echo "image-test: kept $work" || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
check() {  # check NAME COMMAND...: PASS if COMMAND succeeds
  name=$1; shift
  if out=$("$@" 2>&1); then
    passed=$((passed + 1)); echo "PASS $name"
  else
    failed=$((failed + 1)); echo "FAIL $name"; printf '%s\n' "$out" | sed 's/^/    /' | tail -20
  fi
}
wait_for() {  # wait_for SECONDS COMMAND...: until COMMAND succeeds
  t=$1; shift
  end=$(( $(date +%s) + t ))
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -ge $end ] && return 1
    sleep 0.2
  done
}

# 1. base image
if ! podman image exists $BASE; then
  echo "image-test: making $BASE (debootstrap bookworm from $MIRROR)"
  start=$(date +%s)
  debootstrap --variant=minbase bookworm "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
  tar -C "$work/rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - $BASE >/dev/null || exit 1
  rm -rf "$work/rootfs"
  echo "image-test: $BASE made in $(( $(date +%s) - start )) s"
fi

# podman on this machine: a plain `podman run` can fail (crun refuses cgroups
# in hybrid mode; raising rlimits needs CAP_SYS_RESOURCE, which a sandbox may
# lack). Then runc with lowered nofile/nproc limits is used, for the build's
# RUN steps too. XDPVHOST_PODMAN_OPTS overrides the choice.
PODMAN_OPTS=${XDPVHOST_PODMAN_OPTS:-}
if [ -z "$PODMAN_OPTS" ] && ! podman run --rm $BASE true >/dev/null 2>&1; then
  PODMAN_OPTS="--runtime runc --ulimit nofile=16384:16384 --ulimit nproc=8192:8192"
  podman run --rm $PODMAN_OPTS $BASE true || { echo "image-test: podman cannot run containers here" >&2; exit 1; }
  echo "image-test: podman needs $PODMAN_OPTS here"
fi

# 2. context
if [ -z "$context" ]; then
  context=$work/context
  mkdir -p "$context"
  if [ -n "$ref" ]; then
    git archive "$ref" | tar -x -C "$context" || exit 1
  else
    git ls-files -z -co --exclude-standard | tar -c --null -T - --ignore-failed-read -f - 2>/dev/null \
      | tar -x -C "$context" || exit 1
  fi
fi

# 3. build
for target in runtime sidecar; do
  tag=$IMAGE; [ $target = sidecar ] && tag=$SIDECAR
  start=$(date +%s)
  if ! podman build -q $PODMAN_OPTS -f "$context/deploy/Dockerfile" --build-arg BASE=$BASE --target $target \
       -t $tag "$context" >"$work/build-$target.log" 2>&1; then
    tail -40 "$work/build-$target.log"
    echo "image-test: podman build --target $target failed"; echo "0 passed, 1 failed"; exit 1
  fi
  size=$(podman image inspect --format '{{.Size}}' $tag)
  echo "image-test: built $tag (target $target) in $(( $(date +%s) - start )) s, $((size / 1000000)) MB"
done

# 4. checks
check "libraries of xdpvhostd and xdpvhostctl resolve in the image" sh -c "
  podman run $PODMAN_OPTS --rm --entrypoint /bin/sh $IMAGE -c 'ldd /usr/local/sbin/xdpvhostd /usr/local/bin/xdpvhostctl' >$work/ldd.txt &&
  ! grep 'not found' $work/ldd.txt"

mkdir -p "$work/run" && chown 10001:107 "$work/run" && chmod 0750 "$work/run"
cat >"$work/config.json" <<EOF
{"ports": [{"name": "vm1", "socket": "/run/xdpvhost/vm1.sock", "mode": "server", "mac": "52:54:00:00:77:01"}],
 "control": {"socket": "/run/xdpvhost/control.sock"}, "metrics": {"listen": "127.0.0.1:9477"}}
EOF
chmod 0644 "$work/config.json"
podman run $PODMAN_OPTS -d --name xvimg-daemon --user 10001:107 --cap-drop=all --cap-add=$CAPS --read-only \
  --network=none -v "$work/run:/run/xdpvhost" -v "$work/config.json:/etc/xdpvhost/config.json:ro" \
  $IMAGE >/dev/null
check "xdpvhostd answers xdpvhostctl status (uid 10001, four capabilities)" sh -c "
  wait_for() { end=\$((\$(date +%s) + 30)); until podman exec xvimg-daemon xdpvhostctl status >/dev/null 2>&1; do [ \$(date +%s) -ge \$end ] && return 1; sleep 0.2; done; }
  wait_for || { podman logs xvimg-daemon; exit 1; }
  podman exec xvimg-daemon xdpvhostctl status | tee /dev/stderr | grep -q 'vm1'"
check "the daemon's uid is 10001 and its effective capabilities are exactly $CAPS" sh -c "
  podman exec xvimg-daemon cat /proc/1/status >$work/status.txt &&
  grep -Eq '^Uid:\s+10001\s' $work/status.txt &&
  eff=\$(sed -n 's/^CapEff:\s*//p' $work/status.txt) &&
  echo CapEff=\$eff && [ \"\$eff\" = \"\$(printf '%016x' \$(( (1<<12) | (1<<13) | (1<<14) | (1<<21) )))\" ]"
check "the readiness probe's command, xdpvhostctl health, exits 0" sh -c "
  podman exec xvimg-daemon xdpvhostctl --timeout 1 health"
check "/healthz answers 200 ok" sh -c "
  podman exec xvimg-daemon python3 -c 'import urllib.request as u; r = u.urlopen(\"http://127.0.0.1:9477/healthz\"); print(r.status, r.read().decode()); assert r.status == 200'"
check "SIGTERM stops the daemon with status 0" sh -c "
  podman stop -t 10 xvimg-daemon >/dev/null &&
  [ \"\$(podman inspect --format '{{.State.ExitCode}}' xvimg-daemon)\" = 0 ] &&
  ! [ -e $work/run/control.sock ]"

check "without its capabilities the daemon does not start" sh -c "
  ! podman run $PODMAN_OPTS --rm --user 10001:107 --cap-drop=all --network=none \
      -v $work/config.json:/etc/xdpvhost/config.json:ro -v $work/run:/run/xdpvhost $IMAGE >$work/nocaps.txt 2>&1 &&
  cat $work/nocaps.txt"

ip netns add xvimg-node && ip netns add xvimg-peer
ip link add xvimg0 netns xvimg-node type veth peer name xvimg1 netns xvimg-peer
ip -n xvimg-node link set xvimg0 up && ip -n xvimg-peer link set xvimg1 up && ip -n xvimg-node link set lo up
cat >"$work/uplink.json" <<EOF
{"uplinks": [{"name": "up0", "interface": "xvimg0", "queues": [0], "bind": "copy"}],
 "ports": [{"name": "vm1", "socket": "/run/xdpvhost/vm1.sock", "mode": "server", "mac": "52:54:00:00:77:01", "uplink": "up0"}],
 "control": {"socket": "/run/xdpvhost/control.sock"}, "metrics": {"listen": "127.0.0.1:9477"}}
EOF
chmod 0644 "$work/uplink.json"
cat >"$work/uplink_bound.py" <<'PY'
import json, sys
text = json.dumps(json.load(open(sys.argv[1])))
print(text[:800])
assert '"copy"' in text and '"unbound"' not in text, "queue 0 is not bound in copy mode"
PY
for round in first second; do
  podman rm -f -t 0 xvimg-uplink >/dev/null 2>&1
  podman run $PODMAN_OPTS -d --name xvimg-uplink --user 10001:107 --cap-drop=all --cap-add=$CAPS --read-only \
    --network=ns:/run/netns/xvimg-node -v "$work/run:/run/xdpvhost" \
    -v "$work/uplink.json:/etc/xdpvhost/config.json:ro" $IMAGE >/dev/null
  check "$round start as uid 10001: XDP attached to a veth, AF_XDP bound (copy mode)" sh -c "
    end=\$((\$(date +%s) + 30))
    until podman exec xvimg-uplink xdpvhostctl --json uplink list >$work/uplink-list.json 2>&1; do
      [ \$(date +%s) -ge \$end ] && { podman logs xvimg-uplink; exit 1; }; sleep 0.2; done
    /usr/bin/python3 $work/uplink_bound.py $work/uplink-list.json && ip -n xvimg-node link show xvimg0 | grep xdp"
  podman stop -t 10 xvimg-uplink >/dev/null 2>&1
  check "$round stop: status 0, XDP detached (else the next start cannot bind)" sh -c "
    [ \"\$(podman inspect --format '{{.State.ExitCode}}' xvimg-uplink)\" = 0 ] &&
    ! ip -n xvimg-node link show xvimg0 | grep xdp || { podman logs xvimg-uplink | tail -5; exit 1; }"
done

# The DaemonSet's init container, with its own command, user and capabilities
# from deploy/kubernetes/base/daemonset.yaml.
/usr/bin/python3 - "$ROOT/deploy/kubernetes/base/daemonset.yaml" >"$work/init.sh" <<'PY'
import sys, yaml
pod = yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]
init = pod["initContainers"][0]
assert init["command"] == ["/bin/sh", "-ec"], init["command"]
print(init["args"][0])
PY
INIT_CAPS=$(/usr/bin/python3 -c 'import sys, yaml; print(",".join(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["initContainers"][0]["securityContext"]["capabilities"]["add"]))' "$ROOT/deploy/kubernetes/base/daemonset.yaml")
mkdir -p "$work/init/run" "$work/init/state" "$work/init/template" "$work/init/config"
cp "$ROOT/deploy/kubernetes/base/config.json" "$work/init/template/config.json"
check "the DaemonSet's init container prepares the directories and the node's config" sh -c "
  podman run $PODMAN_OPTS --rm --user 0:0 --cap-drop=all --cap-add=$INIT_CAPS --read-only --network=none \
    -e NODE_IP=192.0.2.10 -v $work/init/run:/run/xdpvhost -v $work/init/state:/var/lib/xdpvhost \
    -v $work/init/template:/etc/xdpvhost-template:ro -v $work/init/config:/etc/xdpvhost \
    --entrypoint /bin/sh $IMAGE -ec \"\$(cat $work/init.sh)\" &&
  [ \"\$(stat -c %u:%g:%a $work/init/run)\" = 10001:107:750 ] &&
  [ \"\$(stat -c %u:%g:%a $work/init/run/claims)\" = 0:107:750 ] &&
  [ \"\$(stat -c %u:%g $work/init/state)\" = 10001:107 ] &&
  grep '\"listen\": \"192.0.2.10:9477\"' $work/init/config/config.json"

check "the DRA plugin runs and loads its gRPC stubs" sh -c "
  podman run $PODMAN_OPTS --rm --entrypoint /usr/local/bin/xdpvhost-dra-plugin $IMAGE --help >/dev/null &&
  podman run $PODMAN_OPTS --rm --entrypoint python3 $IMAGE -c 'from xdpvhost_dra import stubs; print(stubs.load())' 2>&1 | tail -3"

mkdir -p "$work/hooks" "$work/stubs" && chown 107:107 "$work/hooks"
kubevirt/sidecar/generate-stubs.sh "$work/stubs"
podman run $PODMAN_OPTS -d --name xvimg-sidecar --network=none -v "$work/hooks:/var/run/kubevirt-hooks" $SIDECAR >/dev/null
check "the sidecar serves the hook API's Info as uid 107" sh -c "
  PYTHONPATH=$ROOT/kubevirt/sidecar XDPVHOST_HOOK_STUBS=$work/stubs /usr/bin/python3 -c '
import grpc, sys
from xdpvhost_sidecar.stubs import info_grpc, info_pb2
ch = grpc.insecure_channel(\"unix:$work/hooks/vhostuser.sock\")
grpc.channel_ready_future(ch).result(timeout=30)
r = info_grpc.InfoStub(ch).Info(info_pb2.InfoParams(), timeout=5)
print(r)
assert list(r.versions) == [\"v1alpha3\"]
' && [ \"\$(stat -c %u $work/hooks/vhostuser.sock)\" = 107 ]"

echo "$passed passed, $failed failed"
[ $failed = 0 ]
