#!/bin/bash
# Deterministic memory-traffic counts of the apply bench's operations, for when wall time on a
# shared machine is too noisy to compare 10k with 50k: callgrind simulates a 48 KiB L1 and a
# 32 MiB last-level cache (this machine's L3) over one run of `examples/ssa_cost` per op and size,
# and this prints instructions and last-level misses per list item (misses are what a 50k
# object pays and a 10k one, staying in L3 between runs, does not).
#
#   bash benches/cachesim.sh [SHAPE ...]     SHAPE: list | listrand (default both)
#
# Needs valgrind; builds the example first. About 20 s per op and size.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --example ssa_cost >/dev/null 2>&1
out=$(mktemp -d)
shapes=("$@"); [ ${#shapes[@]} -eq 0 ] && shapes=(list listrand)
for shape in "${shapes[@]}"; do
  for op in parse clone create reapply change_one second_manager update_one; do
    line="$shape $op"
    for n in 10000 50000; do
      f=$out/$shape.$op.$n
      valgrind --tool=callgrind --cache-sim=yes --I1=32768,8,64 --D1=49152,12,64 --LL=33554432,16,64 \
        --toggle-collect='*measure*' --callgrind-out-file="$f" target/release/examples/ssa_cost "$shape" "$n" "$op" >/dev/null 2>&1
      # Totals: Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
      read -r ir dlmr dlmw < <(callgrind_annotate "$f" 2>/dev/null | grep -m1 "PROGRAM TOTALS" \
        | tr -d ',' | awk '{print $1, $15, $17}')
      line="$line | N=$n Ir/item $((ir / n)) LL-miss/item $(awk -v r="$dlmr" -v w="$dlmw" -v n="$n" 'BEGIN{printf "%.1f (r %.1f w %.1f)", (r+w)/n, r/n, w/n}')"
    done
    echo "$line"
  done
done
rm -rf "$out"
