#!/bin/sh
# `check` of one large file under GNU time: wall, CPU (user + system) and peak RSS; exit status 1
# and the message naming both lines expected (the file's last row repeats line 2's key).
# Usage: bench/scaling/checkMemory.sh FILE [BIN]   (BIN: default this checkout's shipped dist/bundle)
set -eu
file=$1
bin=${2:-"$(dirname "$0")/../../bin/settle-ingest.js"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
/usr/bin/time -f '%e s wall, %U s user, %S s system, %M KiB peak RSS' -o "$dir/time" \
  env SETTLE_STAGING="$dir" node "$bin" check "$file" >"$dir/out" 2>&1 || status=$?
echo "exit $status: $(grep -o 'field [^;]*' "$dir/out" | head -1 | cut -c1-160)"
cat "$dir/time"
