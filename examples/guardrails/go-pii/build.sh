#!/bin/sh
# Builds go-pii.wasm from this directory's Go sources (Go 1.26, no other tools).
# -trimpath and -ldflags "-s -w" keep the module small and free of local paths;
# -buildid= makes two builds of the same sources byte-identical.
set -eu
cd "$(dirname "$0")"
GOOS=wasip1 GOARCH=wasm CGO_ENABLED=0 \
  go build -buildmode=c-shared -trimpath -ldflags="-s -w -buildid=" -o go-pii.wasm .
ls -l go-pii.wasm
