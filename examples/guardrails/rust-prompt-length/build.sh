#!/bin/sh
# Builds prompt-length.wasm with Debian's rustc (/usr/bin/rustc; the rustup
# one that may come first on PATH lacks the wasm32 standard library) and no
# cargo: the kit (sdk/guest/rust) as an rlib, then this cdylib against it.
# Needs: apt-get install rustc libstd-rust-dev-wasm32 lld
set -eu
cd "$(dirname "$0")"
RUSTC=${RUSTC:-/usr/bin/rustc}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
FLAGS="--edition 2021 --target wasm32-unknown-unknown -C opt-level=s -C panic=abort -C codegen-units=1 --remap-path-prefix=$(cd ../../.. && pwd)=."
$RUSTC $FLAGS --crate-type=rlib --crate-name guardrail \
  ../../../sdk/guest/rust/src/lib.rs -o "$OUT/libguardrail.rlib"
$RUSTC $FLAGS --crate-type=cdylib --crate-name prompt_length \
  -C lto -C strip=symbols -C link-arg=-zstack-size=65536 \
  --extern guardrail="$OUT/libguardrail.rlib" src/lib.rs -o prompt-length.wasm
ls -l prompt-length.wasm
