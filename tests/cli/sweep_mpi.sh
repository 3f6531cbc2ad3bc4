#!/usr/bin/env bash
# `mpirun -np N hetsim sweep …`: rank 0 hands out points to the ranks that ask and writes the
# rows; the file is the one a local run writes. Ranks with nothing to do (more ranks than points)
# stop early without holding the sweep up; an invalid sweep stops every rank with exit 2 and no
# file. Needs HETSIM, SRC and MPIEXEC.
set -u
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
run() { timeout 300 "$MPIEXEC" -np "$1" --oversubscribe "${@:2}"; }

sweep="$tmp/sweep.toml"
cp "$SRC/scenarios/default.toml" "$sweep"
cat >> "$sweep" <<'TOML'

[sweep]
"training.global_batch" = { from = 6, to = 600, step = 6 }
"model.preset" = ["llama3-70b", "llama3-8b"]
[[sweep.case]]
"parallel.pp" = 8
"parallel.dp" = 3
TOML
for ext in csv jsonl; do
  "$HETSIM" sweep "$sweep" --out "$tmp/local.$ext" 2>/dev/null || bad "$ext: local sweep failed"
  run 3 "$HETSIM" sweep "$sweep" --out "$tmp/mpi.$ext" 2>"$tmp/mpi.err" || bad "$ext: mpirun -np 3 failed: $(cat "$tmp/mpi.err")"
  cmp -s "$tmp/local.$ext" "$tmp/mpi.$ext" && ok || bad "$ext: the mpirun file differs from the local one"
done
# Three ranks each with two threads: the same bytes again.
run 3 "$HETSIM" sweep "$sweep" --jobs 2 --out "$tmp/mpi2.csv" 2>/dev/null && cmp -s "$tmp/local.csv" "$tmp/mpi2.csv" && ok \
  || bad "mpirun -np 3 --jobs 2 differs"
# --json: one document, from rank 0 only, with every row in order: the local run's bytes (rank 0
# reads the other ranks' rows back from their JSON for it).
run 3 "$HETSIM" sweep "$sweep" --json 2>/dev/null > "$tmp/mpi.json"
python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["point"] for r in d["rows"]] == list(range(201)), "rows out of order"
' "$tmp/mpi.json" && ok || bad "mpirun sweep --json is not one document with every row in order"
"$HETSIM" sweep "$sweep" --json 2>/dev/null > "$tmp/local.json"
cmp -s "$tmp/local.json" "$tmp/mpi.json" && ok || bad "mpirun sweep --json differs from the local one"
# No --out: the CSV on stdout, as a local run prints it.
"$HETSIM" sweep "$sweep" 2>/dev/null > "$tmp/local.stdout"
run 2 "$HETSIM" sweep "$sweep" 2>/dev/null > "$tmp/mpi.stdout"
cmp -s "$tmp/local.stdout" "$tmp/mpi.stdout" && ok || bad "mpirun sweep to stdout differs from the local one"
# --json and --out together: both the file and the document are the local run's.
run 2 "$HETSIM" sweep "$sweep" --json --out "$tmp/both.jsonl" 2>/dev/null > "$tmp/both.json"
cmp -s "$tmp/local.jsonl" "$tmp/both.jsonl" && cmp -s "$tmp/local.json" "$tmp/both.json" && ok \
  || bad "mpirun sweep --json --out differs from the local one"

# More ranks than points: the idle ranks stop at once, the sweep completes.
one="$tmp/one.toml"
cp "$SRC/scenarios/default.toml" "$one"
printf '\n[sweep]\n"training.global_batch" = [576]\n' >> "$one"
run 3 "$HETSIM" sweep "$one" --out "$tmp/one.csv" 2>/dev/null && [ "$(wc -l < "$tmp/one.csv")" -eq 3 ] && ok \
  || bad "three ranks, one point"

# Resume under mpirun: a file cut after 50 rows is completed to the local run's bytes.
head -n 52 "$tmp/local.csv" > "$tmp/part.csv"
run 2 "$HETSIM" sweep "$sweep" --out "$tmp/part.csv" --resume 2>/dev/null && cmp -s "$tmp/local.csv" "$tmp/part.csv" && ok \
  || bad "mpirun --resume"

# An invalid point: every rank stops, exit 2, no file.
badf="$tmp/bad.toml"
cp "$SRC/scenarios/default.toml" "$badf"
printf '\n[sweep]\n"training.global_batch" = [576, 577]\n' >> "$badf"
run 3 "$HETSIM" sweep "$badf" --out "$tmp/bad.csv" >/dev/null 2>"$tmp/bad.err"; rc=$?
[ $rc -ne 0 ] && [ ! -e "$tmp/bad.csv" ] && grep -q "sweep point 1 (training.global_batch = 577)" "$tmp/bad.err" && ok \
  || bad "invalid sweep under mpirun: exit $rc: $(cat "$tmp/bad.err")"

echo "sweep mpi: $pass passed, $fail failed"
[ $fail -eq 0 ]
