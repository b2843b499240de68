#!/usr/bin/env bash
# Stop the daemons that .ci/slurm-up.sh DIR started, by the PIDs it recorded.
dir=${1:?usage: slurm-down.sh DIR}
[ -f "$dir/pids" ] || exit 0
for pid in $(cat "$dir/pids"); do kill "$pid" 2>/dev/null || true; done
for pid in $(cat "$dir/pids"); do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
done
rm -f "$dir/pids"
if [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$(realpath -m "$dir")/slurm.conf" ]; then
    rm -f /etc/slurm/slurm.conf
fi
