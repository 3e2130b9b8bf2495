#!/usr/bin/env bash
# The EAGLE-3 afternoon in one command (docs/walkthrough-eagle3.md): servelab against its simulator playing a
# tensor-parallel SGLang server.
#   (a) reference run: the baseline and the EAGLE-3 config in use, with the box's NCCL tuning (nccl.env) exported;
#   (b) the same file after a "reboot" that lost the NCCL variables: the reference guard stops it before its first
#       trial and names them; then what the lost tuning costs, measured with --accept-env-change in a scratch copy
#       of the store (the real history stays clean), and which of the six variables cost it: `servelab bisect`
#       (docs/bisect.md) measures them in a screening design, each variable restored in half of 16 configurations;
#   (c) tuning restored: a race over EAGLE-3 steps x draft tokens with an A/A control, its best config with CIs vs
#       the baseline and the runner-up, verify-step times, and the HTML report.
# Usage: examples/eagle3-sglang-campaign/run.sh [OUT_DIR]   (default ./servelab-demo-eagle3; an earlier demo's output there is replaced)
# DEMO_QUICK=1 scales it down (shorter loads, fewer trials, grid 2 x 1; bisect only plans) for the test:
# test/campaign-demo.test.ts.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
servelab="$here/../../bin/servelab.js"
out="$(mkdir -p "${1:-servelab-demo-eagle3}" && cd "${1:-servelab-demo-eagle3}" && pwd)"
# Emptied only when it is empty already or an earlier demo's output: never someone's directory by mistake.
if [ -n "$(ls -A "$out")" ] && [ ! -f "$out/files/race.yaml" ]; then
  echo "run.sh: $out is not empty and not an earlier demo's output; give a new or empty directory" >&2
  exit 2
fi
rm -rf "${out:?}"/*
mkdir -p "$out/files"
cp "$here/reference.yaml" "$here/race.yaml" "$out/files/"
if [ "${DEMO_QUICK:-0}" = 1 ]; then
  # One short request per trial measures acceptance with a few draft steps: a draft model that accepts more keeps
  # the ranking of the scaled-down race from being a coin toss (the full demo keeps 0.75).
  sed -i -e 's/--load-ms, "2000"/--load-ms, "100"/' -e 's/outputTokens: 64/outputTokens: 48/' -e 's/--spec-acceptance, "0.75"/--spec-acceptance, "0.9"/' \
    -e 's/^trials: 3$/trials: 1/' -e 's/^trials: 8$/trials: 4/' -e 's/^passes: 2 /passes: 1 /' -e 's/steps: \[1, 2, 3\], draft: \[3, 4\]/steps: [1, 2], draft: [3]/' \
    "$out/files/reference.yaml" "$out/files/race.yaml"
fi
export SERVELAB_STORE="$out/servelab.db"
started=$(date +%s)
sl() { node "$servelab" "$@"; }
step() { printf '\n=== %s\n' "$*"; }
lose_nccl() { for name in $(env | sed -n 's/^\(NCCL_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$name"; done; }

step '(a) reference run, NCCL tuning exported (nccl.env)'
lose_nccl
# shellcheck source=nccl.env
. "$here/nccl.env"
sl run "$out/files/reference.yaml" | tee "$out/a.log"

step '(b) the same file after a reboot that lost the NCCL variables'
lose_nccl
if sl run "$out/files/reference.yaml" >"$out/b.log" 2>&1; then
  cat "$out/b.log"
  echo "unexpected: (b) measured although the NCCL variables were gone" >&2
  exit 1
fi
cat "$out/b.log"
step '(b) what the lost tuning costs: measured anyway, in a scratch copy of the store'
cp "$out/servelab.db" "$out/scratch.db"
SERVELAB_STORE="$out/scratch.db" sl run "$out/files/reference.yaml" --accept-env-change --accept-drift | tee "$out/b-measured.log"

step '(b) which of the lost variables cost it: servelab bisect of the stopped run 2 (scratch store)'
# Named when restoring it alone changes tok/s by 5% or more; the rest are reported with their effect. --trials 48:
# each effect as precise as 48 trials per arm one at a time (96 trials in 16 configurations; one at a time: 384), so
# the 4-8% effects stand apart on a busy machine. The shell still lacks the tuning: run 2's configuration is this
# environment, as the guard saw it.
if [ "${DEMO_QUICK:-0}" = 1 ]; then
  SERVELAB_STORE="$out/scratch.db" sl bisect 2 --tolerance 5% --dry-run | tee "$out/bisect.log"
else
  SERVELAB_STORE="$out/scratch.db" sl bisect 2 --tolerance 5% --trials 48 | tee "$out/bisect.log"
fi

step '(c) tuning restored: race over EAGLE-3 steps x draft tokens, with an A/A control'
# shellcheck source=nccl.env
. "$here/nccl.env"
sl run "$out/files/race.yaml" | tee "$out/c.log"
sl report --out "$out/report" | tee "$out/report.log"

step summary
# Column N of a variant's row in a log's speculative-decoding view (3: tok/s, 8: verify step ms).
spec_cell() { awk -v name="$1" -v column="$3" '/^speculative decoding/ { on = 1 } on && $1 == name && $2 == "single-stream" { print $column; exit }' "$2"; }
median() { spec_cell "$1" "$2" 3; }
verify() { spec_cell "$1" "$2" 8; }
echo "baseline tok/s: $(median baseline "$out/a.log") with the NCCL tuning, $(median baseline "$out/b-measured.log") without it (what (b) would have recorded silently)"
echo "verify step ms of eagle3-s3-d4: $(verify eagle3-s3-d4 "$out/a.log") with the tuning, $(verify eagle3-s3-d4 "$out/b-measured.log") without it"
grep -E '^baseline-aa ' "$out/c.log" | head -1 | sed 's/^/A\/A control: /'
grep -E 'is the best config|ranks first|vs the baseline|vs the runner-up' "$out/c.log"
grep -E '^  NCCL_|^share explained|^cost:|^one at a time' "$out/bisect.log" | sed 's/^/bisect: /' || true
echo "report: $(find "$out/report" -name '*.html' | head -1)"
echo "demo wall time: $(($(date +%s) - started)) s"
