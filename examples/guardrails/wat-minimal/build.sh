#!/bin/sh
# Builds minimal.wasm from minimal.wat with Debian's wabt (apt-get install wabt).
set -eu
cd "$(dirname "$0")"
wat2wasm minimal.wat -o minimal.wasm
ls -l minimal.wasm
