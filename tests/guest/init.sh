#!/bin/sh
# /init of the xdpvhost test guest (busybox initramfs). Configures the
# virtio-net NIC from xv.* kernel command line parameters, runs the test
# steps given there, prints machine-readable lines on the console and powers
# off. The line protocol is described in tests/guest/README.md.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /usr/bin /usr/sbin /sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/ TMPDIR=/tmp
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /tmp

. /lib/xv/xv-lib.sh

echo "XV-BOOTED t=$(xv_uptime)"

finish() {
  echo "XV-DONE rc=$1 t=$(xv_uptime)"
  sync
  poweroff -f
  while :; do sleep 1000; done
}

# --- kernel command line: xv.key=value ------------------------------------
XV_IP='' XV_MAC='' XV_MTU='' XV_GW='' XV_NEIGH='' XV_OFFLOAD='' XV_QUEUES=''
XV_PEER='' XV_LINKWAIT=30 XV_DEBUG='' STEPS=''
# shellcheck disable=SC2013 # the command line is one line of words
for arg in $(cat /proc/cmdline); do
  case "$arg" in
    xv.ip=*)       XV_IP=${arg#xv.ip=} ;;
    xv.mac=*)      XV_MAC=${arg#xv.mac=} ;;
    xv.mtu=*)      XV_MTU=${arg#xv.mtu=} ;;
    xv.gw=*)       XV_GW=${arg#xv.gw=} ;;
    xv.neigh=*)    XV_NEIGH=${arg#xv.neigh=} ;;
    xv.offload=*)  XV_OFFLOAD=${arg#xv.offload=} ;;
    xv.queues=*)   XV_QUEUES=${arg#xv.queues=} ;;
    xv.peer=*)     XV_PEER=${arg#xv.peer=} ;;
    xv.linkwait=*) XV_LINKWAIT=${arg#xv.linkwait=} ;;
    xv.debug=*)    XV_DEBUG=${arg#xv.debug=} ;;
    xv.run=*|xv.cmd=*) STEPS="$STEPS $arg" ;;
  esac
done
export XV_PEER XV_IP

# Keep kernel chatter below warnings off the console so result lines stay whole.
[ -n "$XV_DEBUG" ] || echo 5 > /proc/sys/kernel/printk

# --- modules, in modules.dep order (list made by build_image.sh) ----------
while read -r ko; do
  [ -n "$ko" ] || continue
  if ! insmod "/lib/xv/modules/$ko" 2>/tmp/insmod.err; then
    grep -q 'File exists' /tmp/insmod.err || {
      echo "XV-ERROR insmod $ko: $(cat /tmp/insmod.err)"
    }
  fi
done < /lib/xv/modules.order
echo "XV-MODULES t=$(xv_uptime)"

ip link set lo up

# --- NIC -------------------------------------------------------------------
if [ -n "$XV_IP" ] || [ -n "$XV_MAC" ]; then nic_wait=10; else nic_wait=1; fi
IF=$(xv_find_nic "$XV_MAC" "$nic_wait")
export XV_IF="$IF"
if [ -z "$IF" ]; then
  if [ -n "$XV_IP" ] || [ -n "$XV_MAC" ]; then
    echo "XV-ERROR no virtio-net interface${XV_MAC:+ with mac $XV_MAC}"
    finish 97
  fi
else
  [ -n "$XV_MTU" ] && ip link set dev "$IF" mtu "$XV_MTU"
  if [ -n "$XV_QUEUES" ]; then
    ethtool -L "$IF" combined "$XV_QUEUES" || echo "XV-ERROR ethtool -L $IF combined $XV_QUEUES failed"
  fi
  if [ -n "$XV_OFFLOAD" ]; then
    # shellcheck disable=SC2046
    ethtool -K "$IF" $(echo "$XV_OFFLOAD" | tr ',=' '  ') || echo "XV-ERROR ethtool -K $IF $XV_OFFLOAD failed"
  fi
  ip link set dev "$IF" up
  [ -n "$XV_IP" ] && ip addr add "$XV_IP" dev "$IF"
  if [ -n "$XV_NEIGH" ]; then
    for n in $(echo "$XV_NEIGH" | tr ',' ' '); do
      arp -i "$IF" -s "${n%%@*}" "${n#*@}" || echo "XV-ERROR arp -s $n failed"
    done
  fi
  [ -n "$XV_GW" ] && ip route add default via "$XV_GW" dev "$IF"
  waited=$(xv_wait_operstate "$IF" "$XV_LINKWAIT")
  xv_nic_result "$IF" "$waited"
fi

# --- steps -----------------------------------------------------------------
rc=0
n=0
for step in $STEPS; do
  n=$((n + 1))
  case "$step" in
    xv.run=*)
      # xv.run=name,arg,arg -> xv name arg arg
      # shellcheck disable=SC2046
      /lib/xv/xv $(echo "${step#xv.run=}" | tr ',' ' ')
      rc=$?
      ;;
    xv.cmd=*)
      echo "${step#xv.cmd=}" | base64 -d > /run/cmd$n.sh 2>/dev/null || {
        echo "XV-ERROR xv.cmd step $n is not valid base64"
        rc=96
        break
      }
      sh /run/cmd$n.sh
      rc=$?
      ;;
  esac
  echo "XV-STEP n=$n rc=$rc t=$(xv_uptime)"
  [ "$rc" -eq 0 ] || break
done

finish "$rc"
