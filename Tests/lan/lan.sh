# A simulated LAN, sourced by the LAN scenarios, benchmarks and the demo (root only).
#
#   lan_up N          N hosts (h1..hN): each a network namespace with eth0 =
#                     10.77.0.K/24 on one bridge that has no address and no route
#                     out, its own system D-Bus and avahi-daemon, and its own
#                     /run/dbus and /run/avahi-daemon (bind-mounted per command,
#                     since every `ip netns exec` makes a new mount namespace).
#   on K CMD...       runs CMD on host K (stdin, stdout and stderr pass through);
#                     `on_exec K CMD &` runs it in the background with its PID in $!.
#   lan_link K up|down  plugs host K's cable in or out (its end on the bridge).
#   lan_down          kills every process of every host, removes hosts and
#                     bridge, and the scratch directory. lan_up installs it as
#                     an EXIT/INT/TERM trap, so a failing or interrupted run
#                     leaves nothing behind; callers with their own trap call it.
#
# Traffic stays inside the namespaces: the bridge has no address on this
# machine, and the hosts have no route but their /24.

LAN_TAG="lt$(( $$ % 100000 ))"
LAN_BRIDGE="${LAN_TAG}br"
LAN_DIR=""
LAN_HOSTS=0
LAN_OWNER=""

lan_host() { echo "${LAN_TAG}h$1"; }

lan_require() {
  if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
    echo "the simulated LAN needs root (network and mount namespaces)" >&2
    return 1
  fi
  for tool in ip unshare dbus-daemon avahi-daemon; do
    command -v "$tool" >/dev/null || { echo "the simulated LAN needs $tool (scripts/install-deps.sh --lan)" >&2; return 1; }
  done
}

on() { ( on_exec "$@" ); }

# As `on`, but the calling (sub)shell becomes CMD: `on_exec K CMD &` leaves CMD's PID in $!.
on_exec() {
  local k="$1"; shift
  exec ip netns exec "$(lan_host "$k")" sh -c '
    mount -n --bind "$0/dbus" /run/dbus && mount -n --bind "$0/avahi" /run/avahi-daemon && exec "$@"
  ' "$LAN_DIR/h$k/run" "$@"
}

lan_link() { ip link set "$(lan_host "$1")" "$2"; }

lan_up() {
  local count="$1" k
  lan_require || return 1
  LAN_DIR="$(mktemp -d /tmp/lattice-lan.XXXXXX)"
  LAN_OWNER="$BASHPID"
  trap lan_down EXIT
  trap 'lan_down; exit 130' INT TERM
  mkdir -p /run/dbus /run/avahi-daemon
  ip link add "$LAN_BRIDGE" type bridge
  # Multicast must reach every port whatever IGMP says; no address here, so no route out.
  echo 0 > "/sys/class/net/$LAN_BRIDGE/bridge/multicast_snooping"
  ip link set "$LAN_BRIDGE" up
  for k in $(seq "$count"); do
    local host; host="$(lan_host "$k")"
    mkdir -p "$LAN_DIR/h$k/run/dbus" "$LAN_DIR/h$k/run/avahi"
    ip netns add "$host"
    ip link add "$host" type veth peer name eth0 netns "$host"
    ip link set "$host" master "$LAN_BRIDGE" up
    ip -n "$host" link set lo up
    ip -n "$host" addr add "10.77.0.$k/24" dev eth0
    ip -n "$host" link set eth0 up
    cat > "$LAN_DIR/h$k/avahi.conf" <<EOF
[server]
host-name=h$k
use-ipv4=yes
use-ipv6=${LAN_IPV6:-no}
allow-interfaces=eth0
enable-dbus=yes
ratelimit-interval-usec=0
[wide-area]
enable-wide-area=no
[publish]
publish-hinfo=no
publish-workstation=no
EOF
    on "$k" dbus-daemon --system --fork >/dev/null
    LAN_HOSTS="$k"
    lan_start_avahi "$k" nowait
  done
  for k in $(seq "$count"); do lan_wait_avahi "$k"; done
}

# Starts host K's avahi-daemon (again); waits for it unless told "nowait".
lan_start_avahi() {
  on "$1" sh -c 'exec avahi-daemon --no-chroot --no-drop-root --no-rlimits -f "$0" >"$1" 2>&1 &' \
    "$LAN_DIR/h$1/avahi.conf" "$LAN_DIR/h$1/avahi.log"
  [ "${2:-}" = nowait ] || lan_wait_avahi "$1"
}

lan_wait_avahi() {
  local tries=0
  until on "$1" avahi-daemon --check 2>/dev/null; do
    tries=$((tries + 1))
    if [ "$tries" -gt 100 ]; then echo "avahi-daemon did not start on h$1: $(cat "$LAN_DIR/h$1/avahi.log")" >&2; return 1; fi
    sleep 0.05
  done
}

lan_down() {
  local k host
  # Subshells (`( ... ) &`) inherit the EXIT trap: only the shell that made the LAN takes it down.
  [ "$BASHPID" = "$LAN_OWNER" ] || return 0
  trap - EXIT INT TERM
  for k in $(seq "$LAN_HOSTS"); do
    host="$(lan_host "$k")"
    ip netns pids "$host" 2>/dev/null | xargs -r kill -TERM 2>/dev/null || true
  done
  # Give nodes a moment to stop cleanly, then kill whatever is left.
  for _ in $(seq 30); do
    local left=""
    for k in $(seq "$LAN_HOSTS"); do left+="$(ip netns pids "$(lan_host "$k")" 2>/dev/null || true)"; done
    [ -z "$left" ] && break
    sleep 0.1
  done
  for k in $(seq "$LAN_HOSTS"); do
    host="$(lan_host "$k")"
    ip netns pids "$host" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip link del "$host" 2>/dev/null || true
    ip netns del "$host" 2>/dev/null || true
  done
  ip link del "$LAN_BRIDGE" 2>/dev/null || true
  [ -n "$LAN_DIR" ] && rm -rf "$LAN_DIR"
  LAN_HOSTS=0
}
