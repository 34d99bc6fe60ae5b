#!/bin/sh
# /bin/xv in the test guest: named scenarios that print XV-RESULT lines.
#   xv ping [PEER] [COUNT=5] [INTERVAL=0.2] [SIZE=56]   fails on any loss
#   xv wait-peer [PEER] [TIMEOUT_S=30]      ping once a second until an answer
#   xv wait-echoes COUNT [TIMEOUT_S=60]     until this guest has received COUNT ICMP echo
#                                           requests since boot (/proc/net/snmp InEchos)
#   xv iperf3-client [PEER] [SECONDS=5] [iperf3 args...]   (retries connecting)
#   xv iperf3-server [LIMIT_S=120] [iperf3 args...]  one test (-s -1), then
#                                           returns; fails after LIMIT_S
#   xv http-serve [MB=16]                   writes MB random bytes to /tmp/www/blob,
#                                           reports their sha256 and serves them
#                                           on port 8080 (busybox httpd, in the
#                                           background: the step returns)
#   xv http-get [PEER] [TIMEOUT_S=120]      fetches http://PEER:8080/blob (retries
#                                           connecting), reports bytes, sha256, seconds
#   xv nic                                  NIC state and negotiated features
#   xv sleep SECONDS | xv serve (sleep until killed)
#   xv result '"key":value,...'             print a result line of your own
# PEER defaults to xv.peer from the kernel command line ($XV_PEER); write _
# for it when later arguments follow.
. /lib/xv/xv-lib.sh

name=$1
[ $# -gt 0 ] && shift

peer_or_default() {
  case "$1" in
    ''|-*|_) echo "$XV_PEER" ;;
    *) echo "$1" ;;
  esac
}

one_line() { tr '\n\t\r' '   '; }

case "$name" in
  ping)
    peer=$(peer_or_default "$1")
    count=${2:-5} interval=${3:-0.2} size=${4:-56}
    ping -c "$count" -i "$interval" -s "$size" -W 2 "$peer" > /tmp/ping.out 2>&1
    rc=$?
    cat /tmp/ping.out
    awk -v peer="$peer" -v rc="$rc" -v size="$size" '
      / packets transmitted/ { tx = $1; rx = $4 }
      /round-trip/ { split($4, r, "/"); mn = r[1]; av = r[2]; mx = r[3] }
      END {
        if (tx == "") tx = 0
        if (rx == "") rx = 0
        loss = (tx > 0) ? 100 * (tx - rx) / tx : 100
        if (mn == "") { mn = "null"; av = "null"; mx = "null" }
        if (rc == 0 && (tx == 0 || rx < tx)) rc = 1   # any loss fails the step
        printf "\"kind\":\"ping\",\"peer\":\"%s\",\"size\":%s,\"tx\":%d,\"rx\":%d,\"loss_pct\":%.1f,\"rtt_min_ms\":%s,\"rtt_avg_ms\":%s,\"rtt_max_ms\":%s,\"rc\":%d\n", peer, size, tx, rx, loss, mn, av, mx, rc
      }' /tmp/ping.out > /tmp/ping.json
    xv_result "$(cat /tmp/ping.json)"
    grep -q '"rc":0$' /tmp/ping.json
    ;;
  wait-peer)
    peer=$(peer_or_default "$1")
    timeout=${2:-30}
    start=$(xv_uptime)
    i=0
    rc=1
    while [ "$i" -lt "$timeout" ]; do
      if ping -c 1 -W 1 "$peer" > /dev/null 2>&1; then rc=0; break; fi
      i=$((i + 1))
    done
    waited=$(awk -v a="$start" -v b="$(xv_uptime)" 'BEGIN { printf "%.2f", b - a }')
    xv_result "$(printf '"kind":"wait-peer","peer":"%s","waited_s":%s,"rc":%d' "$peer" "$waited" "$rc")"
    exit "$rc"
    ;;
  wait-echoes)
    want=${1:?COUNT} timeout=${2:-60}
    start=$(xv_uptime)
    echoes() {
      awk '$1 == "Icmp:" && $2 !~ /^[0-9]+$/ { for (i = 2; i <= NF; i++) if ($i == "InEchos") col = i; next }
           $1 == "Icmp:" && col { print $col; exit }' /proc/net/snmp
    }
    i=0
    rc=1
    while [ "$i" -lt "$((timeout * 5))" ]; do
      if [ "$(echoes)" -ge "$want" ]; then rc=0; break; fi
      sleep 0.2
      i=$((i + 1))
    done
    waited=$(awk -v a="$start" -v b="$(xv_uptime)" 'BEGIN { printf "%.2f", b - a }')
    xv_result "$(printf '"kind":"wait-echoes","want":%d,"echoes":%d,"waited_s":%s,"rc":%d' "$want" "$(echoes)" "$waited" "$rc")"
    exit "$rc"
    ;;
  iperf3-client)
    peer=$(peer_or_default "$1")
    case "$1" in ''|-*) ;; *) shift ;; esac
    secs=5
    case "$1" in [0-9]*) secs=$1; shift ;; esac
    attempts=0
    while :; do
      attempts=$((attempts + 1))
      iperf3 -c "$peer" -t "$secs" -i 0 -J "$@" > /tmp/iperf3.json 2>/tmp/iperf3.err
      rc=$?
      # iperf3 3.12 exits 0 on errors when -J is given
      [ "$rc" -eq 0 ] && grep -q '"error":' /tmp/iperf3.json && rc=1
      [ "$rc" -eq 0 ] && break
      [ "$attempts" -ge 30 ] && break
      # Retried: the server not up yet, or still tearing down the last test
      # (its listener resets a control connection made in that moment) --
      # only while no test stream was connected, so a reset mid-test fails.
      if ! grep -q 'unable to connect\|unable to send control message\|Connection refused\|No route to host' /tmp/iperf3.json /tmp/iperf3.err; then
        grep -q 'unable to receive control message' /tmp/iperf3.json &&
          grep -q '"connected":[[:space:]]*\[\]' /tmp/iperf3.json || break
      fi
      sleep 1
    done
    [ -s /tmp/iperf3.json ] || echo null > /tmp/iperf3.json
    xv_result "$(printf '"kind":"iperf3","role":"client","peer":"%s","seconds":%s,"attempts":%d,"rc":%d,"iperf3":%s' \
      "$peer" "$secs" "$attempts" "$rc" "$(one_line < /tmp/iperf3.json)")"
    exit "$rc"
    ;;
  iperf3-server)
    limit=120
    case "$1" in [0-9]*) limit=$1; shift ;; esac
    echo "XV-READY iperf3-server t=$(xv_uptime)"
    timeout "$limit" iperf3 -s -1 -J -i 0 "$@" > /tmp/iperf3s.json 2>/tmp/iperf3s.err
    rc=$?
    [ "$rc" -eq 0 ] && grep -q '"error":' /tmp/iperf3s.json && rc=1
    [ -s /tmp/iperf3s.json ] || echo null > /tmp/iperf3s.json
    xv_result "$(printf '"kind":"iperf3","role":"server","rc":%d,"iperf3":%s' "$rc" "$(one_line < /tmp/iperf3s.json)")"
    exit "$rc"
    ;;
  http-serve)
    mb=${1:-16}
    mkdir -p /tmp/www
    dd if=/dev/urandom of=/tmp/www/blob bs=1048576 count="$mb" 2>/dev/null
    sum=$(sha256sum /tmp/www/blob | cut -d' ' -f1)
    httpd -p 8080 -h /tmp/www
    rc=$?
    xv_result "$(printf '"kind":"http-serve","bytes":%d,"sha256":"%s","rc":%d' \
      "$((mb * 1048576))" "$sum" "$rc")"
    exit "$rc"
    ;;
  http-get)
    peer=$(peer_or_default "$1")
    limit=${2:-120}
    start=$(xv_uptime)
    attempts=0
    while :; do
      attempts=$((attempts + 1))
      timeout "$limit" wget -q -O /tmp/got "http://$peer:8080/blob" 2>/tmp/wget.err
      rc=$?
      [ "$rc" -eq 0 ] && break
      [ "$attempts" -ge 30 ] && break
      grep -qi 'refused\|unreachable\|404' /tmp/wget.err || break
      sleep 1
    done
    secs=$(awk -v a="$start" -v b="$(xv_uptime)" 'BEGIN { printf "%.2f", b - a }')
    bytes=$(wc -c < /tmp/got 2>/dev/null || echo 0)
    sum=$(sha256sum /tmp/got 2>/dev/null | cut -d' ' -f1)
    rm -f /tmp/got
    xv_result "$(printf '"kind":"http-get","peer":"%s","bytes":%d,"sha256":"%s","seconds":%s,"attempts":%d,"rc":%d' \
      "$peer" "$bytes" "$sum" "$secs" "$attempts" "$rc")"
    exit "$rc"
    ;;
  nic)
    nic=${XV_IF:-$(xv_find_nic '' 1)}
    [ -n "$nic" ] || { echo "XV-ERROR no virtio-net interface"; exit 1; }
    xv_nic_result "$nic"
    ;;
  sleep)
    sleep "${1:-1}"
    ;;
  serve)
    echo "XV-READY serve t=$(xv_uptime)"
    while :; do sleep 3600; done
    ;;
  result)
    xv_result "$1"
    ;;
  *)
    echo "XV-ERROR unknown scenario '$name'"
    exit 95
    ;;
esac
