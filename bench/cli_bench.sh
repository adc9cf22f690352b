#!/bin/bash
# `silt produce -d` and `silt consume -d` on a file of ~180-byte access-log lines, against
# `cat file | dd of=copy` (with fsync, as produce syncs) and `cat file > /dev/null`, in one run
# on the same disk. Also: produce with lz4/zstd against the single-core codec rate of the same
# bytes at the same level (lz4 fast mode; zstd level 3, the default of silt and of Kafka), and
# peak memory (max RSS) of each silt run.
set -euo pipefail
SILT=${SILT:?}
DIR=${BENCH_DIR:-/tmp/silt-bench}/cli
SIZE_MB=${BENCH_SIZE_MB:-1024}
mkdir -p "$DIR"
IN="$DIR/access-$SIZE_MB.log"

if [ ! -f "$IN" ]; then
  echo "generating $SIZE_MB MiB of access-log lines..." >&2
  /usr/bin/python3 - "$IN" "$SIZE_MB" <<'PY'
import random, sys
path, mb = sys.argv[1], int(sys.argv[2])
random.seed(7)
paths = ["/", "/index.html", "/api/v1/orders", "/api/v1/users/42", "/static/app.js",
         "/static/style.css", "/images/logo.png", "/search?q=kafka", "/login", "/health"]
agents = ["Mozilla/5.0 (X11; Linux x86_64; rv:109.0) Gecko/20100101 Firefox/115.0",
          "Mozilla/5.0 (Macintosh; Intel Mac OS X 13_4) AppleWebKit/605.1.15 Safari/605.1.15",
          "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/119.0.0.0 Safari/537.36",
          "curl/7.88.1"]
referers = ["-", "https://example.com/", "https://www.google.com/search?q=silt+log",
            "https://example.com/api/docs"]
lines = []
for i in range(20000):
    ip = "%d.%d.%d.%d" % (random.randint(1, 223), random.randint(0, 255), random.randint(0, 255), random.randint(1, 254))
    lines.append('%s - - [29/Nov/2026:20:%02d:%02d +0000] "GET %s HTTP/1.1" %d %d "%s" "%s"\n' % (
        ip, random.randint(0, 59), random.randint(0, 59), random.choice(paths),
        random.choice([200, 200, 200, 304, 404, 500]), random.randint(100, 90000), random.choice(referers), random.choice(agents)))
block = "".join(lines).encode()
target = mb * 1024 * 1024
with open(path, "wb") as f:
    written = 0
    while written + len(block) <= target:
        f.write(block); written += len(block)
    f.write(block[: target - written].rsplit(b"\n", 1)[0] + b"\n")
PY
fi
BYTES=$(stat -c %s "$IN")
LINES=$(wc -l < "$IN")
echo "input: $BYTES bytes, $LINES lines, $(( BYTES / LINES )) bytes/line"

RUNS=${BENCH_RUNS:-3}
now() { date +%s.%N; }
rate() { /usr/bin/python3 -c "import sys; print('%.0f' % ($BYTES / 1048576 / float(sys.argv[1])))" "$1"; }
ratio() { /usr/bin/python3 -c "import sys; print('%.2f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$1" "$2"; }
# best SETUP CMD: the shortest wall time of $RUNS runs of CMD (a shell string), each after
# SETUP. Taking the best of a few runs of each side alike keeps a busy machine's noise out of
# the ratios.
best() {
  local b="" t0 t1 d
  for _ in $(seq "$RUNS"); do
    eval "$1"
    t0=$(now); eval "$2"; t1=$(now)
    d=$(/usr/bin/python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$t0" "$t1")
    if [ -z "$b" ] || /usr/bin/python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$d" "$b"; then b=$d; fi
  done
  echo "$b"
}
maxrss() { { /usr/bin/time -f %M "$@" > /dev/null; } 2>&1 | tail -1; }

cat "$IN" > /dev/null  # warm the page cache for both sides alike
echo "best of $RUNS runs each"

# Baselines.
base_w=$(rate "$(best 'rm -f "$DIR/copy"' 'cat "$IN" | dd of="$DIR/copy" bs=1M conv=fsync status=none')")
rm -f "$DIR/copy"
base_r=$(rate "$(best : 'cat "$IN" > /dev/null')")
echo "baseline: cat | dd of=copy (fsync) $base_w MiB/s; cat > /dev/null $base_r MiB/s"

for z in none lz4 zstd; do
  D="$DIR/data-$z"
  p=$(rate "$(best 'rm -rf "$D"' '"$SILT" produce -d "$D" -t logs -z $z "$IN"')")
  c=$(rate "$(best : '"$SILT" consume -d "$D" -t logs > /dev/null')")
  rss=$(rm -rf "$D"; maxrss "$SILT" produce -d "$D" -t logs -z $z "$IN")
  crss=$(maxrss "$SILT" consume -d "$D" -t logs)
  n=$("$SILT" consume -d "$D" -t logs | wc -l)
  [ "$n" -eq "$LINES" ] || echo "WARNING: consumed $n lines of $LINES" >&2
  echo "produce -z $z: $p MiB/s ($(ratio "$p" "$base_w")x dd), max RSS $((rss / 1024)) MiB; consume: $c MiB/s ($(ratio "$c" "$base_r")x cat), max RSS $((crss / 1024)) MiB; $(du -sm "$D" | cut -f1) MiB on disk"
  if [ "$z" != none ] && command -v "$z" >/dev/null; then
    # lz4 in its fast mode and zstd at level 3: the settings silt (like Kafka) uses.
    if [ "$z" = lz4 ]; then cmd='lz4 -1 -q -c "$IN" > /dev/null'; else cmd='zstd -3 -q -T1 -c "$IN" > /dev/null'; fi
    codec=$(rate "$(best : "$cmd")")
    echo "  $z command-line codec, one core: $codec MiB/s; silt produce -z $z at $(ratio "$p" "$codec")x of it"
  fi
  rm -rf "$D"
done
