# Shared helpers of the SessionMesh network lab. Sourced, not run.
#
# A lab is a folder $MESH_LAB (made by `scripts/lab/lab`) holding lab.env (LAB_NAME=smlab<pid>,
# LAB_HOSTS, LAB_IPV6), the namespaces it created (namespaces), the daemons it started with
# their process names (pids), and one folder per host hK/ with avahi.conf, addr, and run/dbus,
# run/avahi-daemon (bind-mounted over /run/dbus and /run/avahi-daemon inside that host only).
#
# Rules kept here: avahi-daemon and dbus-daemon run only inside namespaces this lab created,
# never in the root namespace; every wait is bounded; only recorded PIDs are signalled.

lab_die() { echo "lab: $*" >&2; exit 1; }

# Loads $MESH_LAB/lab.env, or dies with what to do.
lab_load() {
    [ -n "${MESH_LAB:-}" ] || lab_die "MESH_LAB is not set; start a lab with scripts/lab/lab up N (it prints MESH_LAB=...)"
    [ -f "$MESH_LAB/lab.env" ] || lab_die "no lab at $MESH_LAB (lab.env missing)"
    # shellcheck disable=SC1091
    . "$MESH_LAB/lab.env"
    case "$LAB_NAME" in smlab[0-9]*) ;; *) lab_die "unexpected lab name '$LAB_NAME'" ;; esac
}

lab_check_host() {
    case "$1" in ''|*[!0-9]*) lab_die "host must be a number 1..$LAB_HOSTS, got '$1'" ;; esac
    [ "$1" -ge 1 ] && [ "$1" -le "$LAB_HOSTS" ] || lab_die "host must be 1..$LAB_HOSTS, got '$1'"
}

host_ns() { echo "${LAB_NAME}h$1"; }
host_dir() { echo "$MESH_LAB/h$1"; }

# bounded_wait TRIES DELAY CMD...: runs CMD until it succeeds, at most TRIES times.
bounded_wait() {
    local tries=$1 delay=$2 i
    shift 2
    for ((i = 0; i < tries; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep "$delay"
    done
    return 1
}

# in_host K CMD...: runs CMD inside host K's network namespace, in a private mount namespace
# where /run is a fresh tmpfs with the host's own /run/dbus and /run/avahi-daemon, so
# libavahi-client and the avahi tools talk to that host's daemons. Replaces the shell (exec),
# so the caller's PID is CMD's PID.
in_host() {
    local k=$1
    shift
    exec ip netns exec "$(host_ns "$k")" unshare --mount --propagation private \
        sh -c 'mount -t tmpfs -o mode=0755 smlab-run /run &&
               mkdir -p /run/dbus /run/avahi-daemon &&
               mount --bind "$0/run/dbus" /run/dbus &&
               mount --bind "$0/run/avahi-daemon" /run/avahi-daemon &&
               exec "$@"' "$(host_dir "$k")" "$@"
}

# in_host_bare K CMD...: like in_host, but with empty /run/dbus and /run/avahi-daemon: no bus,
# no daemon reachable (to test behaviour without Avahi).
in_host_bare() {
    local k=$1
    shift
    exec ip netns exec "$(host_ns "$k")" unshare --mount --propagation private \
        sh -c 'mount -t tmpfs -o mode=0755 smlab-run /run &&
               mkdir -p /run/dbus /run/avahi-daemon &&
               exec "$@"' smlab-bare "$@"
}

# Records PID with its expected process name, so teardown never signals a reused PID.
record_pid() {
    echo "$1 $2" >>"$MESH_LAB/pids"
}

# pid_is PID NAME: true when PID is alive and is NAME.
pid_is() {
    [ -r "/proc/$1/comm" ] && [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ]
}

# Starts avahi-daemon in host K and waits (bounded) until it runs; records its PID.
start_avahi() {
    local k=$1 d pid
    d=$(host_dir "$k")
    rm -f "$d/run/avahi-daemon/pid"
    ("$LAB_SCRIPTS/exec" "$k" avahi-daemon --no-drop-root --no-chroot --no-rlimits -f "$d/avahi.conf" -D) \
        >>"$d/avahi.log" 2>&1 || lab_die "avahi-daemon did not start in host $k (see $d/avahi.log)"
    bounded_wait 50 0.1 test -s "$d/run/avahi-daemon/pid" || lab_die "avahi-daemon in host $k wrote no pid file"
    pid=$(cat "$d/run/avahi-daemon/pid")
    pid_is "$pid" avahi-daemon || lab_die "avahi-daemon in host $k is not running (pid $pid)"
    record_pid "$pid" avahi-daemon
}

# Stops host K's avahi-daemon (SIGTERM, so it sends goodbye packets), waits bounded.
stop_avahi() {
    local k=$1 d pid
    d=$(host_dir "$k")
    [ -s "$d/run/avahi-daemon/pid" ] || return 0
    pid=$(cat "$d/run/avahi-daemon/pid")
    if pid_is "$pid" avahi-daemon; then
        kill -TERM "$pid"
        bounded_wait 50 0.1 sh -c "! test -d /proc/$pid" || kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$d/run/avahi-daemon/pid"
}

# lab_owns_meshd PID NS NAME: true when PID runs meshd in namespace NS of lab NAME.
lab_owns_meshd() {
    case "$2" in "$3"h[0-9]*) ;; *) return 1 ;; esac
    pid_is "$1" meshd && [ "$(ip netns identify "$1" 2>/dev/null)" = "$2" ]
}

# lab_teardown DIR NAME: stops the daemons recorded in DIR/pids (only if the PID still runs
# the recorded program), deletes the namespaces recorded in DIR/namespaces that carry NAME,
# removes DIR. Bounded: TERM, up to 3 s, then KILL.
lab_teardown() {
    local dir=$1 name=$2 pid prog ns i alive
    local IFS=$' \t\n'
    set +e
    case "$name" in smlab[0-9]*) ;; *) echo "lab: refusing to tear down '$name'" >&2; return 1 ;; esac
    # Daemons started by scripts/lab/meshd that their caller left running: only a PID that
    # still runs meshd *inside this lab's namespace* is ours (never a reused PID elsewhere).
    if [ -f "$dir/meshd-pids" ]; then
        while read -r pid ns; do
            lab_owns_meshd "$pid" "$ns" "$name" && kill -TERM "$pid" 2>/dev/null
        done <"$dir/meshd-pids"
        for ((i = 0; i < 30; i++)); do
            alive=0
            while read -r pid ns; do lab_owns_meshd "$pid" "$ns" "$name" && alive=1; done <"$dir/meshd-pids"
            [ $alive = 0 ] && break
            sleep 0.1
        done
        while read -r pid ns; do
            lab_owns_meshd "$pid" "$ns" "$name" && kill -KILL "$pid" 2>/dev/null
        done <"$dir/meshd-pids"
    fi
    if [ -f "$dir/pids" ]; then
        while read -r pid prog; do
            pid_is "$pid" "$prog" && kill -TERM "$pid" 2>/dev/null
        done <"$dir/pids"
        for ((i = 0; i < 30; i++)); do
            alive=0
            while read -r pid prog; do pid_is "$pid" "$prog" && alive=1; done <"$dir/pids"
            [ $alive = 0 ] && break
            sleep 0.1
        done
        while read -r pid prog; do
            pid_is "$pid" "$prog" && kill -KILL "$pid" 2>/dev/null
        done <"$dir/pids"
    fi
    if [ -f "$dir/namespaces" ]; then
        while read -r ns; do
            case "$ns" in "${name}"h[0-9]*|"${name}"br) ip netns del "$ns" 2>/dev/null ;; esac
        done <"$dir/namespaces"
    fi
    case "$dir" in /tmp/smlab[0-9]*.*) rm -rf "$dir" ;; esac
    echo "lab: $name torn down" >&2
}
