#!/usr/bin/env bash
# Tensor-parallel scaling of a small model against two published V100 studies (relative figures: no
# FLOP convention enters). Usage (from the repository root): tests/perf/tp_scaling_check.sh [build/release/bin/hetsim]
#  - strong scaling, Shoeybi et al. 2019 (arXiv 1909.08053, §5.1): the 1.2B GPT-2 model at batch 8 on
#    1/2/4/8 GPUs of a DGX-2H with tensor parallelism; published speed-ups 1.64, 2.34, 2.98 over 1 GPU;
#  - weak scaling (the same paper, Fig. 5, 2019 code): 100 / 95 / 82 / 77 % per-GPU throughput for
#    1.2B/2.5B/4.2B/8.3B on 1/2/4/8 GPUs, batch 8.
# The scenarios are derived from scenarios/validation/megatron-v1-gpt2-1.2b-v100.toml.
set -euo pipefail
hetsim=${1:-build/release/bin/hetsim}
base=scenarios/validation/megatron-v1-gpt2-1.2b-v100.toml
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
step() { "$hetsim" estimate --json "$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_time_s"])'; }
variant() {  # out tp layers hidden heads
  sed -e "s/^tp = .*/tp = $2/" -e "s/^devices_per_node = .*/devices_per_node = $2/" -e "s/^layers = .*/layers = $3/" \
      -e "s/^hidden = .*/hidden = $4/" -e "s/^heads = .*/heads = $5/" -e "s/^ffn_hidden = .*/ffn_hidden = $(( $4 * 4 ))/" \
      -e '/^\[reference\]/,$d' "$base" > "$1"
}
echo "strong scaling, 1.2B, batch 8: GPUs, hetsim step (s), hetsim speed-up, published speed-up"
variant "$tmp/s1.toml" 1 40 1536 16; t1=$(step "$tmp/s1.toml")
for row in "1 1.00" "2 1.64" "4 2.34" "8 2.98"; do
  set -- $row; variant "$tmp/s.toml" "$1" 40 1536 16; t=$(step "$tmp/s.toml")
  python3 -c "print('  %d  %.3f  %.2f  %s' % ($1, $t, $t1 / $t, '$2'))"
done
echo "weak scaling, batch 8: model, GPUs, hetsim per-GPU throughput vs 1 GPU, published"
w1=$(python3 -c "print($t1)")
for row in "1 40 1536 16 100" "2 54 1920 20 95" "4 64 2304 24 82" "8 72 3072 32 77"; do
  set -- $row; variant "$tmp/w.toml" "$1" "$2" "$3" "$4"
  t=$("$hetsim" estimate --json "$tmp/w.toml" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tflops_per_device"])')
  t0=$("$hetsim" estimate --json "$tmp/s1.toml" | python3 -c 'import json,sys; j=json.load(sys.stdin); print(j["tflops_per_device"])')
  python3 -c "print('  h%d  %d  %.0f %%  %s %%' % ($3, $1, 100 * $t / $t0, '$5'))"
done
