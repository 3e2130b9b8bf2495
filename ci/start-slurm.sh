#!/usr/bin/env bash
# Start a single-node Slurm cluster (munged + slurmctld + slurmd on localhost) for servelab's Slurm tests.
# Idempotent: a second run finds the daemons up and only waits for the node to be usable.
# Needs: root, `apt-get install -y slurm-wlm munge`. Writes /etc/slurm/slurm.conf (only if absent or written by
# this script before), logs and state under $SERVELAB_CI_DIR/slurm. Tests find it through $SERVELAB_CI_DIR/slurm/ready.
set -euo pipefail

CI_DIR="${SERVELAB_CI_DIR:-/tmp/servelab-ci}"
DIR="$CI_DIR/slurm"
CONF=/etc/slurm/slurm.conf
MARKER="# written by servelab ci/start-slurm.sh"

[ "$(id -u)" -eq 0 ] || { echo "start-slurm.sh: must run as root" >&2; exit 1; }
for bin in munged slurmctld slurmd sinfo; do
  command -v "$bin" >/dev/null || { echo "start-slurm.sh: $bin not found; apt-get install -y slurm-wlm munge" >&2; exit 1; }
done

mkdir -p "$DIR/state" "$DIR/spool" /etc/slurm
rm -f "$DIR/ready"

# --- munge: Slurm's authentication. The package normally creates the key; create it if it did not.
if [ ! -s /etc/munge/munge.key ]; then
  mkdir -p /etc/munge
  if command -v mungekey >/dev/null; then mungekey --create --keyfile=/etc/munge/munge.key --force
  else dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none; fi
fi
chown munge:munge /etc/munge /etc/munge/munge.key 2>/dev/null || true
chmod 700 /etc/munge; chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  if id munge >/dev/null 2>&1; then runuser -u munge -- munged; else munged --force; fi
  for _ in $(seq 1 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  munge -n | unmunge >/dev/null || { echo "start-slurm.sh: munged does not work; see /var/log/munge/munged.log" >&2; exit 1; }
fi

# --- slurm.conf: one node "localhost" with this machine's CPUs; memory is not a consumable so small test jobs
# run side by side; no cgroups (containers often lack them).
if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
  echo "start-slurm.sh: $CONF exists and was not written by this script; refusing to overwrite it" >&2
  exit 1
fi
# Topology exactly as slurmd detects it (a mismatch makes slurmd complain or the node drain).
HW="$(slurmd -C | head -n1)"
hw() { echo "$HW" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
CPUS="$(hw CPUs)"
MEM_MB="$(( $(hw RealMemory) * 9 / 10 ))"
cat > "$DIR/slurm.conf.new" <<CONF
$MARKER
ClusterName=servelab-ci
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
SlurmctldPort=6817
SlurmdPort=6818
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
KillWait=5
MinJobAge=600
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS Boards=$(hw Boards) SocketsPerBoard=$(hw SocketsPerBoard) CoresPerSocket=$(hw CoresPerSocket) ThreadsPerCore=$(hw ThreadsPerCore) RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
changed=1
if [ -f "$CONF" ] && cmp -s "$DIR/slurm.conf.new" "$CONF"; then changed=0; fi
mv "$DIR/slurm.conf.new" "$CONF"

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
if alive "$DIR/slurmctld.pid"; then
  [ "$changed" -eq 0 ] || scontrol reconfigure
else
  slurmctld
fi
if ! alive "$DIR/slurmd.pid"; then
  # slurmd initialises a cgroup plugin even with proctrack/linuxproc; autodetect works on most hosts. Where it
  # fails (cgroup v2 without systemd, typical in containers) retry once with v2 told to ignore systemd.
  if ! slurmd -N localhost; then
    if [ -f /etc/slurm/cgroup.conf ] && ! grep -qF "$MARKER" /etc/slurm/cgroup.conf; then
      echo "start-slurm.sh: slurmd failed and /etc/slurm/cgroup.conf is not ours; see $DIR/slurmd.log" >&2; exit 1
    fi
    printf '%s\nCgroupPlugin=cgroup/v2\nIgnoreSystemd=yes\n' "$MARKER" > /etc/slurm/cgroup.conf
    slurmd -N localhost || { echo "start-slurm.sh: slurmd does not start:" >&2; tail -n 15 "$DIR/slurmd.log" >&2; exit 1; }
  fi
fi

# --- wait until the node accepts jobs (controller up, node registered, not down/drained)
state=""
for _ in $(seq 1 150); do
  state="$(sinfo -h -n localhost -o '%T' 2>/dev/null | head -n1 || true)"
  case "$state" in
    idle*|mixed*|allocated*|completing*) break ;;
    down*|drain*|drained*|draining*|fail*) scontrol update NodeName=localhost State=RESUME 2>/dev/null || true ;;
  esac
  sleep 0.2
done
case "$state" in
  idle*|mixed*|allocated*|completing*) ;;
  *) echo "start-slurm.sh: node localhost is '${state:-not registered}'; see $DIR/slurmctld.log and $DIR/slurmd.log" >&2; exit 1 ;;
esac

echo "{\"partition\":\"debug\",\"cpus\":$CPUS,\"conf\":\"$CONF\"}" > "$DIR/ready"
echo "slurm ready: node localhost ($CPUS CPUs) in partition debug; logs in $DIR"
