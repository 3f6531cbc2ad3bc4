#!/usr/bin/env bash
# `hetsim sweep` end to end: a sweep killed (SIGKILL) mid-run and completed with --resume gives
# the very bytes of an uninterrupted run; --resume refuses another sweep's file; an invalid point
# stops the sweep before anything is written; --json is one JSON document; other commands refuse
# a [sweep] scenario. Needs HETSIM (the binary) and SRC (repo root).
set -u
pass=0 fail=0
ok()  { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

# 10,000 estimate points of the default scenario (about a second in a release build): long
# enough that the kill below lands mid-run however fast the machine is. Under the sanitizers,
# where each point runs about 20 times slower, SWEEP_BATCHES=100 makes it 1,000 (tests/CMakeLists.txt).
batches=${SWEEP_BATCHES:-1000}
sweep="$tmp/sweep.toml"
cp "$SRC/scenarios/default.toml" "$sweep"
cat >> "$sweep" <<EOF

[sweep]
"training.global_batch" = { from = 6, to = $((6 * batches)), step = 6 }
"cluster.network.oversubscription" = { from = 1.0, to = 2.0, count = 10 }
EOF
points=$((batches * 10))

"$HETSIM" sweep --help | grep -q -- "--resume" && ok || bad "sweep --help lists --resume"

for ext in csv jsonl; do
  ref="$tmp/ref.$ext" part="$tmp/part.$ext"
  header=$([ $ext = csv ] && echo 2 || echo 1)
  "$HETSIM" sweep "$sweep" --jobs 2 --out "$ref" 2>/dev/null || bad "$ext: uninterrupted sweep failed"
  [ "$(wc -l < "$ref")" -eq $((points + header)) ] && ok || bad "$ext: $(wc -l < "$ref") lines in the uninterrupted file"

  # Killed once 20 rows are in the file, the file holds the header and a prefix of the rows.
  "$HETSIM" sweep "$sweep" --jobs 2 --out "$part" 2>/dev/null &
  pid=$!
  for _ in $(seq 1 20000); do
    [ -f "$part" ] && [ "$(wc -l < "$part")" -ge $((header + 20)) ] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.005
  done
  kill -KILL $pid 2>/dev/null; wait $pid 2>/dev/null
  lines=$(wc -l < "$part")
  if [ "$lines" -lt $((points + header)) ] && [ "$lines" -ge $((header + 20)) ]; then ok
  else bad "$ext: the kill did not land mid-sweep ($lines lines)"; fi
  # What was written is the uninterrupted file's beginning (a line cut by the kill aside).
  cmp -s -n "$(head -n "$lines" "$part" | wc -c)" "$part" "$ref" && ok || bad "$ext: the killed file is not a prefix"

  "$HETSIM" sweep "$sweep" --jobs 2 --out "$part" --resume 2>"$tmp/resume.err" || bad "$ext: --resume failed: $(cat "$tmp/resume.err")"
  cmp -s "$part" "$ref" && ok || bad "$ext: resumed file differs from the uninterrupted one"
  grep -q "were in $part already" "$tmp/resume.err" && ok || bad "$ext: --resume did not say it kept rows"

  # A complete file: --resume runs nothing and changes nothing.
  "$HETSIM" sweep "$sweep" --out "$part" --resume 2>"$tmp/resume.err" && cmp -s "$part" "$ref" && ok \
    || bad "$ext: --resume of a complete file"
  grep -q "^hetsim: 0 points run" "$tmp/resume.err" && ok || bad "$ext: --resume of a complete file ran points"
done

# FILE.pending: rows that finished before an earlier point's are kept there, and --resume
# delivers them without running them again; so are the rows an mpirun's other ranks kept in their
# journals, FILE.pending.rankR (a journal of another sweep is not used). A file cut after 10 rows,
# a pending row for point 15 and journal rows for points 15 and 20 whose figures were altered: the
# resumed file carries FILE.pending's row 15 and the journal's row 20, and none of these files
# is left once the sweep completes. A fresh run (no --resume) removes them first.
head -n 12 "$tmp/ref.csv" > "$tmp/cut.csv"
python3 - "$tmp/ref.jsonl" "$tmp/cut.csv.pending" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
head = json.loads(lines[0])
def write(path, hash, rows, tail=""):
    with open(path, "w") as f:
        f.write(json.dumps({"hetsim_sweep_pending": 1, "hash": hash}, separators=(",", ":")) + "\n")
        for point, step in rows:
            row = json.loads(lines[1 + point])
            row["step_s"] = step
            f.write(json.dumps(row) + "\n")
        f.write(tail)
write(sys.argv[2], head["hash"], [(15, 12345.5)], '{"point": 16, "cut sho')  # a line cut by a crash
write(sys.argv[2] + ".rank1", head["hash"], [(15, 999.5)])
write(sys.argv[2] + ".rank2", head["hash"], [(20, 22222.5)], '{"point": 21, "cut')
write(sys.argv[2] + ".rank3", "0" * len(head["hash"]), [(25, 33333.5)])  # another sweep's
PY
cp "$tmp/cut.csv.pending.rank2" "$tmp/journal.keep"
"$HETSIM" sweep "$sweep" --jobs 2 --out "$tmp/cut.csv" --resume 2>"$tmp/cut.err" || bad "--resume with a pending file failed"
[ "$(sed -n 18p "$tmp/cut.csv" | cut -d, -f1,5)" = "15,12345.5" ] && ok || bad "the pending row of point 15 was not used: $(sed -n 18p "$tmp/cut.csv" | cut -c1-60)"
[ "$(sed -n 23p "$tmp/cut.csv" | cut -d, -f1,5)" = "20,22222.5" ] && ok || bad "the journal's row of point 20 was not used: $(sed -n 23p "$tmp/cut.csv" | cut -c1-60)"
diff <(sed '18d;23d' "$tmp/cut.csv") <(sed '18d;23d' "$tmp/ref.csv") >/dev/null && ok \
  || bad "the other rows differ after a resume with a pending file and journals"
grep -q "; 2 of these were kept in $tmp/cut.csv.pending, not run again" "$tmp/cut.err" && ok || bad "--resume with journals: $(cat "$tmp/cut.err")"
[ -z "$(ls "$tmp"/cut.csv.pending* 2>/dev/null)" ] && ok || bad "pending files outlived a complete sweep: $(ls "$tmp"/cut.csv.pending*)"
cp "$tmp/journal.keep" "$tmp/cut.csv.pending.rank2"
"$HETSIM" sweep "$sweep" --out "$tmp/cut.csv" 2>/dev/null && cmp -s "$tmp/cut.csv" "$tmp/ref.csv" && [ ! -e "$tmp/cut.csv.pending.rank2" ] && ok \
  || bad "a fresh sweep used or kept an earlier run's journal"

small_progress="$tmp/progress.toml"  # 500 estimate points
cp "$SRC/scenarios/default.toml" "$small_progress"
printf '\n[sweep]\n"training.global_batch" = { from = 6, to = 3000, step = 6 }\n' >> "$small_progress"

# Ctrl-C (SIGINT): the sweep finishes the points being run, says so, exits 130 and leaves a
# prefix of the uninterrupted file; --resume completes it to the same bytes.
"$HETSIM" sweep "$sweep" --jobs 2 --out "$tmp/int.csv" 2>"$tmp/int.err" &
pid=$!
for _ in $(seq 1 20000); do
  [ -f "$tmp/int.csv" ] && [ "$(wc -l < "$tmp/int.csv")" -ge 22 ] && break
  kill -0 $pid 2>/dev/null || break
  sleep 0.005
done
kill -INT $pid 2>/dev/null; wait $pid; rc=$?
lines=$(wc -l < "$tmp/int.csv")
[ $rc -eq 130 ] && [ "$lines" -lt $((points + 2)) ] && grep -q "interrupted" "$tmp/int.err" && ok \
  || bad "Ctrl-C: exit $rc, $lines lines, $(tail -n 1 "$tmp/int.err")"
cmp -s "$tmp/int.csv" "$tmp/ref.csv" -n "$(wc -c < "$tmp/int.csv")" && ok || bad "Ctrl-C left a file that is not a prefix"
"$HETSIM" sweep "$sweep" --jobs 2 --out "$tmp/int.csv" --resume 2>/dev/null && cmp -s "$tmp/int.csv" "$tmp/ref.csv" && ok \
  || bad "--resume after Ctrl-C differs from the uninterrupted file"

# The progress line: on a terminal (a pseudo-terminal from script(1), where installed) a bar with
# the points, the rate and an ETA, the last one saying how long it took; not when stderr is a file.
if command -v script >/dev/null 2>&1; then
  script -qec "\"$HETSIM\" sweep \"$small_progress\" --out \"$tmp/pg.csv\"" /dev/null > "$tmp/pg.tty" 2>&1
  tr '\r' '\n' < "$tmp/pg.tty" | grep -a -q "ETA" && tr '\r' '\n' < "$tmp/pg.tty" | grep -a -q "500/500 points, .* in " && ok \
    || bad "no progress line on a terminal: $(tr '\r' '\n' < "$tmp/pg.tty" | tail -n 3)"
fi
"$HETSIM" sweep "$small_progress" --out "$tmp/pg2.csv" 2>"$tmp/pg.err" && ! grep -q "ETA" "$tmp/pg.err" && ok \
  || bad "a progress line on a file: $(head -c 200 "$tmp/pg.err")"

# Another sweep's file: refused, untouched.
other="$tmp/other.toml"
sed 's/, step = 6 }/, step = 12 }/' "$sweep" > "$other"
cmp -s "$sweep" "$other" && bad "the other sweep is the same sweep"
cp "$tmp/ref.csv" "$tmp/keep.csv"
err=$("$HETSIM" sweep "$other" --out "$tmp/ref.csv" --resume 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "--resume of another sweep's file exits $rc, want 2"
echo "$err" | grep -q "written by a different sweep" && ok || bad "--resume of another sweep's file: $err"
cmp -s "$tmp/ref.csv" "$tmp/keep.csv" && ok || bad "--resume of another sweep's file changed it"

# An invalid point: exit 2, the axis, the value and the reader's file:line message, no file.
bad_sweep="$tmp/bad.toml"
cp "$SRC/scenarios/default.toml" "$bad_sweep"
printf '\n[sweep]\n"training.global_batch" = [576, 577]\n' >> "$bad_sweep"
err=$("$HETSIM" sweep "$bad_sweep" --out "$tmp/bad.csv" 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "invalid point exits $rc, want 2"
echo "$err" | grep -q "bad.toml:[0-9]*:[0-9]*: error: sweep point 1 (training.global_batch = 577)" && ok \
  || bad "invalid point message: $err"
[ ! -e "$tmp/bad.csv" ] && ok || bad "an invalid sweep wrote its results file"
out=$("$HETSIM" sweep "$bad_sweep" --json 2>/dev/null)
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["error"]["exit_status"] == 2' && ok \
  || bad "invalid sweep --json is not the error document"

# --json: one document, rows in point order.
small="$tmp/small.toml"
cp "$SRC/scenarios/default.toml" "$small"
printf '\n[sweep]\n"training.global_batch" = [288, 576]\n"model.preset" = ["llama3-70b", "llama3-8b"]\n' >> "$small"
"$HETSIM" sweep "$small" --json --jobs 2 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [r["point"] for r in d["rows"]] == [0, 1, 2, 3], d
assert d["sweep"]["columns"] == ["training.global_batch", "model.preset"], d["sweep"]
assert all(r["status"] == "ok" and r["step_s"] > 0 for r in d["rows"]), d["rows"]
assert d["rows"][1]["values"] == {"training.global_batch": 288, "model.preset": "llama3-8b"}, d["rows"][1]
' && ok || bad "sweep --json"

# --plot: an SVG drawn by Qt's generator, with the axes' labels and units; where this build has
# no plot module (no Qt), an environment error (exit 1) before anything runs, and no rows lost.
if [ -e "$(dirname "$HETSIM")/libhetsim_plot.so" ]; then
  "$HETSIM" sweep "$small" --plot "$tmp/p.svg" --plot-y tokens_per_s >/dev/null 2>"$tmp/plot.err" && ok \
    || bad "sweep --plot: $(cat "$tmp/plot.err")"
  grep -q "<svg" "$tmp/p.svg" && grep -q "training.global_batch (sequences)" "$tmp/p.svg" \
    && grep -q "throughput (tokens/s)" "$tmp/p.svg" && grep -q "<desc>hetsim sweep --plot</desc>" "$tmp/p.svg" && ok \
    || bad "sweep --plot: the SVG lacks its axis labels"
  if grep -qv "^hetsim:" "$tmp/plot.err"; then bad "sweep --plot printed Qt noise: $(cat "$tmp/plot.err")"; else ok; fi
  "$HETSIM" sweep "$small" --plot "$tmp/h.svg" --heatmap --plot-y mfu >/dev/null 2>&1 && grep -q "MFU (%)" "$tmp/h.svg" \
    && ok || bad "sweep --plot --heatmap"
else
  "$HETSIM" sweep "$small" --plot "$tmp/p.svg" >/dev/null 2>&1; rc=$?
  [ $rc -eq 1 ] && [ ! -e "$tmp/p.svg" ] && ok || bad "sweep --plot without the module exits $rc, want 1"
fi
"$HETSIM" sweep "$small" --plot "$tmp/q.svg" --plot-y speed >/dev/null 2>&1; rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/q.svg" ] && ok || bad "sweep --plot-y speed exits $rc, want 2"

# engine = "simgrid": each point in a child process (SimGrid runs one simulation per process), the
# rows those of `hetsim simulate --engine simgrid` of each point.
if [ -e "$(dirname "$HETSIM")/libhetsim_simgrid.so" ]; then
  sg="$tmp/sg.toml"
  cp "$SRC/scenarios/default.toml" "$sg"
  printf '\n[sweep]\ncommand = "simulate"\nengine = "simgrid"\n"training.global_batch" = [6, 12]\n' >> "$sg"
  rows=$("$HETSIM" sweep "$sg" --jobs 2 --json 2>/dev/null)
  single=$(sed -e '/^\[sweep\]/,$d' -e 's/^global_batch = 576 /global_batch = 12 /' "$sg" > "$tmp/sg12.toml" &&
           "$HETSIM" simulate --engine simgrid --json "$tmp/sg12.toml" 2>/dev/null)
  echo "$rows" | python3 -c '
import json, sys
rows = json.load(sys.stdin)["rows"]
single = json.loads(sys.argv[1])
assert [r["status"] for r in rows] == ["ok", "ok"], rows
assert rows[1]["step_s"] == single["step_time_s"], (rows[1]["step_s"], single["step_time_s"])
' "$single" && ok || bad "simgrid sweep rows differ from simulate --engine simgrid"
fi

# A scenario with [sweep] is not one scenario.
err=$("$HETSIM" estimate "$small" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$err" | grep -q "use \`hetsim sweep" && ok || bad "estimate of a sweep: exit $rc: $err"

echo "sweep cli: $pass passed, $fail failed"
[ $fail -eq 0 ]
