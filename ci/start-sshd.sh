#!/usr/bin/env bash
# Start a throwaway OpenSSH server on 127.0.0.1 for servelab's SSH executor tests.
# Idempotent: a second run finds it already up and only re-checks that key login works.
# Needs: root, `apt-get install -y openssh-server`. Everything it creates lives under $SERVELAB_CI_DIR/ssh.
# Tests find it through $SERVELAB_CI_DIR/ssh/ready (written last, only once a key login succeeded).
set -euo pipefail

CI_DIR="${SERVELAB_CI_DIR:-/tmp/servelab-ci}"
PORT="${SERVELAB_CI_SSH_PORT:-2222}"
DIR="$CI_DIR/ssh"
SSHD="$(command -v sshd || echo /usr/sbin/sshd)"

[ "$(id -u)" -eq 0 ] || { echo "start-sshd.sh: must run as root (sshd needs it to log in as root)" >&2; exit 1; }
[ -x "$SSHD" ] || { echo "start-sshd.sh: sshd not found; apt-get install -y openssh-server" >&2; exit 1; }

mkdir -p "$DIR" /run/sshd
chmod 700 "$DIR"
rm -f "$DIR/ready"

# Throwaway host key and client key, generated once.
[ -f "$DIR/host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -C servelab-ci-host -f "$DIR/host_ed25519_key"
[ -f "$DIR/client_key" ] || ssh-keygen -q -t ed25519 -N '' -C servelab-ci-client -f "$DIR/client_key"
[ -f "$DIR/slow_shell_key" ] || ssh-keygen -q -t ed25519 -N '' -C servelab-ci-slow-shell -f "$DIR/slow_shell_key"
cp "$DIR/client_key.pub" "$DIR/authorized_keys"
# A second key whose every command starts 0.7 s late, as on a host whose ~/.bashrc runs `conda init`: the SSH
# executor's warning about slow command startup is tested with it (test/exec-ssh-shell-startup.test.ts).
echo "command=\"sleep 0.7; eval \\\"\$SSH_ORIGINAL_COMMAND\\\"\" $(cat "$DIR/slow_shell_key.pub")" >> "$DIR/authorized_keys"
chmod 600 "$DIR/authorized_keys" "$DIR/client_key" "$DIR/slow_shell_key"
# Pre-trusted host key so clients need no StrictHostKeyChecking=no.
echo "[127.0.0.1]:$PORT $(cut -d' ' -f1,2 "$DIR/host_ed25519_key.pub")" > "$DIR/known_hosts"

cat > "$DIR/sshd_config" <<CONF
# servelab CI sshd: loopback only, key auth only.
Port $PORT
ListenAddress 127.0.0.1
HostKey $DIR/host_ed25519_key
PidFile $DIR/sshd.pid
AuthorizedKeysFile $DIR/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AllowTcpForwarding yes
MaxSessions 50
MaxStartups 50:30:100
# Bash sources ~/.bashrc for every command sshd runs (Debian builds it with SSH_SOURCE_BASHRC) unless SHLVL says it is
# not a top-level shell. This image's root .bashrc runs \`pyenv init\`: 0.7 s of CPU per command, about one core
# for an SSH test file polling once a second. The tests are about servelab, not the host's rc files.
SetEnv SHLVL=1
PrintMotd no
LogLevel INFO
Subsystem sftp internal-sftp
CONF
"$SSHD" -t -f "$DIR/sshd_config"

running() { [ -f "$DIR/sshd.pid" ] && kill -0 "$(cat "$DIR/sshd.pid")" 2>/dev/null; }
if running; then
  # Already up: reload so a changed config/key takes effect without dropping sessions.
  kill -HUP "$(cat "$DIR/sshd.pid")"
else
  "$SSHD" -f "$DIR/sshd_config" -E "$DIR/sshd.log"
fi

client() {
  ssh -F /dev/null -p "$PORT" -i "$DIR/client_key" -o IdentitiesOnly=yes -o BatchMode=yes \
    -o UserKnownHostsFile="$DIR/known_hosts" -o StrictHostKeyChecking=yes -o ConnectTimeout=5 root@127.0.0.1 "$@"
}
for _ in $(seq 1 50); do
  if client true 2>/dev/null; then
    cat > "$DIR/ready" <<JSON
{"host":"root@127.0.0.1","port":$PORT,"identityFile":"$DIR/client_key","slowShellIdentityFile":"$DIR/slow_shell_key","knownHosts":"$DIR/known_hosts"}
JSON
    echo "sshd ready on 127.0.0.1:$PORT (key: $DIR/client_key, log: $DIR/sshd.log)"
    exit 0
  fi
  sleep 0.2
done
echo "start-sshd.sh: sshd on 127.0.0.1:$PORT does not accept the CI key; see $DIR/sshd.log" >&2
client true || true
exit 1
