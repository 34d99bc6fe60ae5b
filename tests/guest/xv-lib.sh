# Shell functions shared by the guest's /init and /bin/xv (busybox sh).

xv_uptime() {
  read -r up _ < /proc/uptime
  echo "$up"
}

# xv_result JSON-OBJECT-BODY: prints one result line, adding "t".
# Written with a single printf so the line reaches the console in one write.
xv_result() {
  printf 'XV-RESULT {%s,"t":%s}\n' "$1" "$(xv_uptime)"
}

xv_is_virtio_nic() {
  drv=$(readlink "/sys/class/net/$1/device/driver" 2>/dev/null)
  [ "${drv##*/}" = virtio_net ]
}

# xv_find_nic [MAC] [TIMEOUT_S]: name of the (first) virtio-net interface,
# or the one with MAC; waits up to TIMEOUT_S for it to appear.
xv_find_nic() {
  want=$(echo "$1" | tr 'A-F' 'a-f')
  tries=$(( ${2:-10} * 10 ))
  while [ "$tries" -gt 0 ]; do
    for d in /sys/class/net/*; do
      i=${d##*/}
      xv_is_virtio_nic "$i" || continue
      if [ -z "$want" ] || [ "$(cat "$d/address")" = "$want" ]; then
        echo "$i"
        return 0
      fi
    done
    tries=$((tries - 1))
    sleep 0.1
  done
  return 1
}

# xv_wait_operstate IF TIMEOUT_S: waits for operstate "up", prints seconds waited.
xv_wait_operstate() {
  start=$(xv_uptime)
  tries=$(( ${2:-30} * 20 ))
  while [ "$tries" -gt 0 ]; do
    [ "$(cat "/sys/class/net/$1/operstate")" = up ] && break
    tries=$((tries - 1))
    sleep 0.05
  done
  awk -v a="$start" -v b="$(xv_uptime)" 'BEGIN { printf "%.2f\n", b - a }'
}

# xv_nic_result IF [LINK_WAIT_S]
xv_nic_result() {
  d=/sys/class/net/$1
  nq=0
  for q in "$d"/queues/rx-*; do [ -e "$q" ] && nq=$((nq + 1)); done
  addr=$(ip -o -4 addr show dev "$1" | awk '{ print $4; exit }')
  xv_result "$(printf '"kind":"nic","ifname":"%s","mac":"%s","mtu":%s,"operstate":"%s","carrier":%s,"link_wait_s":%s,"features":"%s","rx_queues":%s,"ip":"%s"' \
    "$1" "$(cat "$d/address")" "$(cat "$d/mtu")" "$(cat "$d/operstate")" \
    "$(cat "$d/carrier" 2>/dev/null || echo 0)" "${2:-0}" \
    "$(cat "$d/device/features")" "$nq" "$addr")"
}
