# Shared by .ci/start, .ci/test and .ci/run: install what a fresh machine of
# this kind lacks (pinned versions), and build the console site + server.
# Source it; it sets -euo pipefail.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

say() { printf '\n== %s\n' "$*" >&2; }

# wasm-bindgen-cli must match the wasm-bindgen crate in Cargo.lock exactly.
wasm_bindgen_version() {
  awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock
}

ensure_apt() {
  local missing=()
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if ((${#missing[@]})); then
    say "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
}

ensure_rust_tools() {
  if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
    say "adding the wasm32-unknown-unknown target"
    rustup target add wasm32-unknown-unknown
  fi
  local want
  want="$(wasm_bindgen_version)"
  if [[ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$want" ]]; then
    say "installing wasm-bindgen-cli $want (about 3 minutes, once)"
    # No --locked: its lock file names a crate version this registry lacks.
    cargo install wasm-bindgen-cli --version "$want" --force
  fi
}

# build_site debug|release: the WebAssembly bundle and assets into
# target/site, then the server binary into target/<profile>/reckon (the
# release one with the site built in). The
# release bundle has no names (two thirds of its size were names); both are
# written with brotli and gzip copies beside each file, which the server
# sends to browsers that take them. (wasm-opt was measured and left out:
# BENCHMARKS.md, Decisions.)
build_site() {
  local profile="$1" wasm_profile cargo_flag
  if [[ "$profile" == release ]]; then
    wasm_profile=wasm-release; cargo_flag=(--release)
  else
    wasm_profile=debug; cargo_flag=()
  fi
  say "building the console (WebAssembly, $wasm_profile)"
  local wasm_args=(-p app --lib --target wasm32-unknown-unknown --no-default-features --features hydrate)
  if [[ "$wasm_profile" == wasm-release ]]; then
    cargo build "${wasm_args[@]}" --profile wasm-release
  else
    cargo build "${wasm_args[@]}"
  fi
  ensure_apt brotli
  local site="$ROOT/target/site" bindgen_flags=() brotli_quality=5
  if [[ "$wasm_profile" == wasm-release ]]; then
    bindgen_flags=(--remove-name-section --remove-producers-section)
    brotli_quality=11
  fi
  rm -rf "$site.tmp" && mkdir -p "$site.tmp/pkg"
  wasm-bindgen --target web --no-typescript "${bindgen_flags[@]}" --out-dir "$site.tmp/pkg" --out-name reckon \
    "target/wasm32-unknown-unknown/$wasm_profile/app.wasm"
  cp style/main.css "$site.tmp/pkg/reckon.css"
  cp -r public/. "$site.tmp/"
  for f in "$site.tmp"/pkg/*.{js,wasm,css}; do
    gzip -9 -n -k "$f"
    brotli -q "$brotli_quality" -k "$f"
  done
  rm -rf "$site" && mv "$site.tmp" "$site"
  say "building the server ($profile)"
  if [[ "$profile" == release ]]; then
    # The release binary carries the site (build.rs embeds the folder named
    # here): it runs from any folder with nothing beside it.
    RECKON_EMBED_SITE="$site" cargo build "${cargo_flag[@]}" --bin reckon
  else
    # Debug builds embed none (nor do the test binaries): the site is
    # served from target/site or RECKON_SITE_DIR.
    cargo build --bin reckon
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# A throwaway PostgreSQL 15 on a free port; sets RECKON_TEST_PG.
# initdb/postgres refuse root, so they run as the `postgres` user then.
PG_BIN=/usr/lib/postgresql/15/bin
as_pg() { if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start_postgres() {
  [[ -x "$PG_BIN/initdb" ]] || ensure_apt postgresql-15
  PG_DIR="$(mktemp -d /tmp/reckon-pg.XXXXXX)"
  [[ "$(id -u)" == 0 ]] && chown postgres:postgres "$PG_DIR"
  PG_PORT="$(free_port)"
  as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U reckon --auth=trust -E UTF8 >"$PG_DIR/initdb.log"
  # fsync off: a throwaway cluster; durability is not what these tests test.
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w -t 60 \
    -o "-p $PG_PORT -k $PG_DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off" \
    start >/dev/null
  export RECKON_TEST_PG="postgres://reckon@127.0.0.1:$PG_PORT/postgres"
  say "PostgreSQL 15 on 127.0.0.1:$PG_PORT ($PG_DIR)"
}

stop_postgres() {
  if [[ -n "${PG_DIR:-}" && -d "$PG_DIR" ]]; then
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
  fi
}

# schemathesis (PyPI, pinned in .ci/contract-requirements.txt) in its own
# virtualenv under target/; sets SCHEMATHESIS to its `st`.
ensure_schemathesis() {
  local venv="$ROOT/target/schemathesis" want
  want="$(awk -F'==' '$1 == "schemathesis" { print $2 }' "$ROOT/.ci/contract-requirements.txt")"
  if [[ "$("$venv/bin/st" --version 2>/dev/null | awk '{print $NF}')" != "$want" ]]; then
    say "installing schemathesis $want into target/schemathesis"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$ROOT/.ci/contract-requirements.txt"
  fi
  SCHEMATHESIS="$venv/bin/st"
}

# aiosmtpd (PyPI, pinned in .ci/alerts-requirements.txt) in its own
# virtualenv under target/; exports RECKON_TEST_AIOSMTPD, the Python that
# has it, for the alert-channel tests' local SMTP server.
ensure_aiosmtpd() {
  local venv="$ROOT/target/aiosmtpd" want
  want="$(awk -F'==' '$1 == "aiosmtpd" { print $2 }' "$ROOT/.ci/alerts-requirements.txt")"
  if [[ "$("$venv/bin/python" -c 'import aiosmtpd; print(aiosmtpd.__version__)' 2>/dev/null)" != "$want" ]]; then
    say "installing aiosmtpd $want into target/aiosmtpd"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$ROOT/.ci/alerts-requirements.txt"
  fi
  export RECKON_TEST_AIOSMTPD="$venv/bin/python"
}

# promtool from Debian's `prometheus` package, unpacked under target/ (not
# installed: the package would start a Prometheus server); sets PROMTOOL.
ensure_promtool() {
  local dir="$ROOT/target/promtool"
  if ! "$dir/usr/bin/promtool" --version >/dev/null 2>&1; then
    say "unpacking promtool from Debian's prometheus package into target/promtool"
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$dir" && { apt-get download prometheus >/dev/null 2>&1 \
      || { apt-get update -qq && apt-get download prometheus >/dev/null; }; } \
      && dpkg-deb -x prometheus_*.deb . && rm -f prometheus_*.deb)
  fi
  PROMTOOL="$dir/usr/bin/promtool"
}

# mdBook, pinned, built from crates.io into target/mdbook (without its
# `serve`/`watch` features: only `build` is used); sets MDBOOK.
MDBOOK_VERSION=0.5.4
ensure_mdbook() {
  local root="$ROOT/target/mdbook"
  if [[ "$("$root/bin/mdbook" --version 2>/dev/null)" != "mdbook v$MDBOOK_VERSION" ]]; then
    say "installing mdbook $MDBOOK_VERSION into target/mdbook (a few minutes, once)"
    cargo install mdbook --version "$MDBOOK_VERSION" --locked --no-default-features \
      --features search --root "$root" --force
  fi
  MDBOOK="$root/bin/mdbook"
}
