#!/usr/bin/env bash
# Start a throw-away single-node SLURM cluster on this (Debian 12, root, no systemd) machine:
# munged, slurmctld and slurmd from bookworm's packages, configured in a private folder.
# Usage: .ci/slurm-up.sh DIR, then export SLURM_CONF=DIR/slurm.conf for every SLURM client;
#        .ci/slurm-down.sh DIR stops exactly the daemons started here, by PID.
# A fake GPU (gres gpu:1 backed by /dev/null) lets GPU requests be scheduled without a GPU.
set -euo pipefail
dir=$(realpath -m "${1:?usage: slurm-up.sh DIR}")
mkdir -p "$dir"/{state,spool,log}

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q munge slurmctld slurmd slurm-client >/dev/null
fi

host=$(hostname -s)
# The node line as slurmd sees this machine, with RealMemory lowered to 85 %.
node=$(slurmd -C | head -n 1)
memory=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node")
node=$(sed "s/RealMemory=[0-9]*/RealMemory=$((memory * 85 / 100))/" <<<"$node")
cat >"$dir/slurm.conf" <<CONF
ClusterName=ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=600
ReturnToService=2
MailProg=/bin/true
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
GresTypes=gpu
$node Gres=gpu:1 State=UNKNOWN
PartitionName=cpu Nodes=ALL Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=ALL MaxTime=INFINITE State=UP
CONF
cat >"$dir/gres.conf" <<CONF
AutoDetect=off
NodeName=$host Name=gpu File=/dev/null
CONF
export SLURM_CONF="$dir/slurm.conf"
# Job steps (srun inside a batch job) do not see SLURM_CONF: they read /etc/slurm/slurm.conf,
# which points at this configuration until slurm-down.sh removes it.
if [ -e /etc/slurm/slurm.conf ] && [ "$(readlink /etc/slurm/slurm.conf)" != "$SLURM_CONF" ]; then
    echo "slurm-up: /etc/slurm/slurm.conf exists and is not ours; not touching it" >&2
    exit 1
fi
mkdir -p /etc/slurm
ln -sfn "$SLURM_CONF" /etc/slurm/slurm.conf

install -d -o munge -g munge -m 0755 /run/munge
setpriv --reuid=munge --regid=munge --init-groups /usr/sbin/munged --foreground \
    >"$dir/log/munged.log" 2>&1 &
pids=$!
for _ in $(seq 50); do [ -S /run/munge/munge.socket.2 ] && break; sleep 0.1; done
slurmctld -D -i >"$dir/log/slurmctld.out" 2>&1 &
pids="$pids $!"
slurmd -D -N "$host" >"$dir/log/slurmd.out" 2>&1 &
pids="$pids $!"
echo "$pids" >"$dir/pids"

for _ in $(seq 100); do
    if sinfo -h -N -o '%T' 2>/dev/null | grep -qx idle; then
        echo "slurm-up: node $host idle (SLURM_CONF=$SLURM_CONF, PIDs $pids)"
        exit 0
    fi
    sleep 0.2
done
echo "slurm-up: the node did not become idle; logs in $dir/log" >&2
sinfo -N -l >&2 || true
exit 1
