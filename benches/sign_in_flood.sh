#!/usr/bin/env bash
# Peak memory of a server under a sign-in flood: N concurrent wrong
# passwords for one user, then N concurrent sign-ins for N names from N
# loopback addresses (past the throttle, into the hash gate). Prints the
# answers by status and the server's peak RSS (VmHWM) before and after.
# Usage: benches/sign_in_flood.sh [N] [BINARY]   (default 200, target/release/reckon)
set -euo pipefail
N=${1:-200}
BIN=${2:-target/release/reckon}
DIR=$(mktemp -d /tmp/reckon-flood.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export RECKON_DATA_DIR="$DIR/data" RECKON_LISTEN="127.0.0.1:$PORT" RUST_LOG=error
printf 'correct horse battery\n' | "$BIN" user add --username alice --role operator >/dev/null
"$BIN" serve >"$DIR/server.log" 2>&1 &
PID=$!
trap 'kill $PID 2>/dev/null; rm -rf "$DIR"' EXIT
for _ in $(seq 1 100); do curl -fsS "http://127.0.0.1:$PORT/healthz" >/dev/null 2>&1 && break; sleep 0.1; done
hwm() { awk '/VmHWM/ {print $2/1024 " MiB"}' "/proc/$PID/status"; }
echo "idle: peak RSS $(hwm)"
seq 1 "$N" | xargs -P "$N" -I{} curl -s -o /dev/null -w '%{http_code}\n' \
  -H "origin: http://127.0.0.1:$PORT" -d username=alice -d 'password=wrong horse battery' \
  "http://127.0.0.1:$PORT/api/login" | sort | uniq -c | sed 's/^/  one user: /'
echo "after $N wrong sign-ins for one user: peak RSS $(hwm)"
seq 1 "$N" | xargs -P "$N" -I{} sh -c 'curl -s -o /dev/null -w "%{http_code}\n" --interface 127.0.1.$(( {} % 250 + 1 )) \
  -H "origin: http://127.0.0.1:'"$PORT"'" -d username=guest{} -d "password=correct horse battery" \
  "http://127.0.0.1:'"$PORT"'/api/login"' | sort | uniq -c | sed 's/^/  many users: /'
echo "after $N sign-ins for $N names from 250 addresses: peak RSS $(hwm)"
