#!/bin/sh
# Builds banned-words.wasm: installs AssemblyScript (pinned in package.json)
# and the guest kit (sdk/guest/assemblyscript, linked), then compiles.
set -eu
cd "$(dirname "$0")"
npm install --no-audit --no-fund
npx asc assembly/index.ts --runtime incremental --optimize --outFile banned-words.wasm
ls -l banned-words.wasm
