#!/usr/bin/env bash
# `mpirun -np N hetsim sweep …`: rank 0 hands out points to the ranks that ask and writes the
# rows; the file is the one a local run writes. Ranks with nothing to do (more ranks than points)
# stop early without holding the sweep up; a rank killed mid-sweep loses no row any rank finished
# (--resume runs none of them again); an invalid sweep (its points checked by every rank, a share each) stops every rank with
# exit 2 and no file, with the local run's report. Needs HETSIM, SRC and
# MPIEXEC (SWEEP_BATCHES: see below).
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

# A rank killed mid-sweep (SIGKILL to rank 1's process): mpirun ends the job; what rank 0 wrote
# is a prefix of the local file, and with FILE.pending and the other ranks' journals
# (FILE.pending.rankR) it holds every row a rank finished; --resume under mpirun runs none of those
# again and completes the file to the local run's bytes. 10,000 estimate points (1,000 under the
# sanitizers: SWEEP_BATCHES), so that the kill lands mid-run.
batches=${SWEEP_BATCHES:-1000}
long="$tmp/long.toml"
cp "$SRC/scenarios/default.toml" "$long"
printf '\n[sweep]\n"training.global_batch" = { from = 6, to = %d, step = 6 }\n"cluster.network.oversubscription" = { from = 1.0, to = 2.0, count = 10 }\n' \
  $((6 * batches)) >> "$long"
"$HETSIM" sweep "$long" --out "$tmp/long-local.csv" 2>/dev/null || bad "the long local sweep failed"
# Each worker logs "RANK POINT" for every row whose send has completed (HETSIM_SWEEP_SENT_LOG).
# An eager send completes when the row leaves the sender, not when it arrives, so some of them
# were on their way when the job ended: they must be in the killed or the surviving rank's journal.
HETSIM_SWEEP_SENT_LOG="$tmp/sent.log" run 3 -x HETSIM_SWEEP_SENT_LOG "$HETSIM" sweep "$long" --out "$tmp/long.csv" >/dev/null 2>&1 &
job=$!
killed=""
for _ in $(seq 1 20000); do
  if [ -f "$tmp/long.csv" ] && [ "$(wc -l < "$tmp/long.csv")" -ge 22 ]; then
    for pid in $(pgrep -f "sweep $long --out $tmp/long.csv" || true); do
      if tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1"; then
        kill -KILL "$pid" 2>/dev/null && killed=$pid
      fi
    done
    break
  fi
  kill -0 $job 2>/dev/null || break
  sleep 0.005
done
wait $job; rc=$?
rows=$(($(wc -l < "$tmp/long.csv") - 2))
if [ -n "$killed" ] && [ $rc -ne 0 ] && [ $rows -lt $((batches * 10)) ]; then ok
else bad "the kill of rank 1 did not land mid-sweep (pid '$killed', exit $rc, $rows rows)"; fi
cmp -s -n "$(head -n $((rows + 2)) "$tmp/long.csv" | wc -c)" "$tmp/long.csv" "$tmp/long-local.csv" && ok \
  || bad "what rank 0 wrote before the kill is not a prefix of the local file"
kept=$(python3 - "$tmp/long.csv" "$tmp/sent.log" <<'PY'
import glob, json, os, sys
out = sys.argv[1]
have = {int(l.split(",")[0]) for l in open(out) if l[:1].isdigit() and l.endswith("\n")}  # a cut line is not kept
rows = len(have)
def rows_of(path):
    points = set()
    for l in open(path):
        try:
            r = json.loads(l)
        except ValueError:
            continue  # a line cut by the kill
        if "point" in r: points.add(int(r["point"]))
    return points
pending = rows_of(out + ".pending") if os.path.exists(out + ".pending") else set()
journals = {p: rows_of(p) for p in glob.glob(out + ".pending.rank*")}
kept = set(pending).union(*journals.values()) if journals else set(pending)
sent = {}
for l in (open(sys.argv[2]) if os.path.exists(sys.argv[2]) else []):
    if l.strip():
        rank, point = (int(x) for x in l.split())
        sent.setdefault(rank, []).append(point)
lost = False
for rank, points in sorted(sent.items()):
    missing = [p for p in points if p not in have and p not in kept]
    print(f"rank {rank}: {len(points)} rows sent, {sum(p not in have for p in points)} not in the file, {len(missing)} lost",
          file=sys.stderr)
    lost = lost or bool(missing)
if lost or not sent or not journals:
    sys.exit(1)
print(len({p for p in kept if p >= rows}))  # what --resume must take instead of running
PY
) && ok || bad "rows a rank finished before the kill are in neither the file, FILE.pending nor a rank's journal"
run 3 "$HETSIM" sweep "$long" --out "$tmp/long.csv" --resume 2>"$tmp/long.err" && cmp -s "$tmp/long.csv" "$tmp/long-local.csv" && ok \
  || bad "mpirun --resume after a killed rank differs from the local run: $(tail -n 3 "$tmp/long.err")"
{ [ "${kept:-0}" -eq 0 ] || grep -q "; $kept of these were kept in $tmp/long.csv.pending, not run again" "$tmp/long.err"; } && ok \
  || bad "--resume did not take the $kept kept rows: $(tail -n 3 "$tmp/long.err")"
[ -z "$(ls "$tmp"/long.csv.pending* 2>/dev/null)" ] && ok || bad "a completed sweep left $(ls "$tmp"/long.csv.pending*)"

# Invalid points, one in each rank's share of the validation (points i % 3 == rank): every rank
# stops, exit 2, no file, and rank 0 reports every line a local run reports.
badf="$tmp/bad.toml"
cp "$SRC/scenarios/default.toml" "$badf"
printf '\n[sweep]\n"training.global_batch" = [576, 577, 578, 579]\n' >> "$badf"
"$HETSIM" sweep "$badf" --out "$tmp/bad-local.csv" >/dev/null 2>"$tmp/bad-local.err"
run 3 "$HETSIM" sweep "$badf" --out "$tmp/bad.csv" >/dev/null 2>"$tmp/bad.err"; rc=$?
[ $rc -ne 0 ] && [ ! -e "$tmp/bad.csv" ] && grep -q "sweep point 1 (training.global_batch = 577)" "$tmp/bad.err" \
  && grep -q "sweep point 3 (training.global_batch = 579)" "$tmp/bad.err" \
  && [ "$(grep -cxFf "$tmp/bad.err" "$tmp/bad-local.err")" -eq "$(wc -l < "$tmp/bad-local.err")" ] && ok \
  || bad "invalid sweep under mpirun: exit $rc: $(cat "$tmp/bad.err")"

echo "sweep mpi: $pass passed, $fail failed"
[ $fail -eq 0 ]
