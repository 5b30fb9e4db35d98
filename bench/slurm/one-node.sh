#!/bin/sh
# A one-node Slurm cluster on this machine (Debian 12, as root), for trying
# `gpulab grade --cluster slurm`: installs munge and slurm-wlm, writes /etc/slurm from the
# templates beside this script, starts munged, slurmctld and slurmd, and waits until the
# node is idle. Run it again at any time: it starts only what is not running.
#
#   bench/slurm/one-node.sh          set up and start
#   bench/slurm/one-node.sh stop     stop slurmd, slurmctld and munged (by their pid files)
#   bench/slurm/one-node.sh status   sinfo and squeue
set -eu
here=$(cd "$(dirname "$0")" && pwd)

running() {     # running PIDFILE: the pid file names a live process
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

stop_one() {    # stop_one NAME PIDFILE
    if running "$2"; then
        pid=$(cat "$2")
        echo "stopping $1 (pid $pid)"
        kill "$pid"
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
        if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    fi
    rm -f "$2"
}

case "${1:-start}" in
stop)
    stop_one slurmd /run/slurmd.pid
    stop_one slurmctld /run/slurmctld.pid
    stop_one munged /run/munge/munged.pid
    exit 0 ;;
status)
    sinfo -N -l
    squeue
    exit 0 ;;
start) ;;
*)
    echo "usage: $0 [start|stop|status]" >&2
    exit 2 ;;
esac

[ "$(id -u)" = 0 ] || { echo "$0: run it as root" >&2; exit 1; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        slurm-wlm slurm-client munge
fi

# munge: a key (the package makes one), its socket folder, the daemon
if [ ! -s /etc/munge/munge.key ]; then
    mungekey --create --keyfile /etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key && chmod 600 /etc/munge/munge.key
install -d -o munge -g munge -m 755 /run/munge
install -d -o munge -g munge -m 700 /var/log/munge /var/lib/munge
if ! running /run/munge/munged.pid; then
    runuser -u munge -- /usr/sbin/munged
fi
munge -n | unmunge >/dev/null

# slurm: the config, filled in for this host, and the daemons
host=$(hostname -s)
cpus=$(slurmd -C | sed -n 's/.*CPUs=\([0-9]*\).*/\1/p')
memory=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
install -d /etc/slurm
install -d -o slurm -g slurm /var/lib/slurm/slurmctld /var/log/slurm
install -d /var/lib/slurm/slurmd
for n in 0 1; do      # gres.conf's fake GPUs: character devices that are /dev/null
    fake=/var/lib/slurm/fake-gpu$n
    [ -c "$fake" ] || { rm -f "$fake"; mknod -m 666 "$fake" c 1 3; }
done
changed=0
for name in slurm.conf gres.conf; do
    sed -e "s/@HOST@/$host/g" -e "s/@CPUS@/$cpus/g" -e "s/@MEMORY@/$memory/g" \
        "$here/$name" > "/etc/slurm/$name.new"
    if cmp -s "/etc/slurm/$name.new" "/etc/slurm/$name"; then
        rm "/etc/slurm/$name.new"
    else
        mv "/etc/slurm/$name.new" "/etc/slurm/$name"
        changed=1
    fi
done
if [ "$changed" = 1 ]; then     # a new config: restart what runs on the old one
    stop_one slurmd /run/slurmd.pid
    stop_one slurmctld /run/slurmctld.pid
fi
if ! running /run/slurmctld.pid; then
    slurmctld
fi
if ! running /run/slurmd.pid; then
    slurmd
fi

# the node: idle (not down or drained from an earlier run) within a minute
for _ in $(seq 60); do
    state=$(sinfo -h -n "$host" -o %T 2>/dev/null || true)
    case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*) scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
    esac
    sleep 1
done
sinfo -N -o "%N %T %c %m %G %P"
case "$state" in
idle|mixed|allocated) ;;
*) echo "$0: node $host is $state; see /var/log/slurm/slurmd.log and slurmctld.log" >&2
   exit 1 ;;
esac
