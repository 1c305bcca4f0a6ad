#!/usr/bin/env bash
# scripts/lib.sh: a build whose stamp is newer than every source is current (scripts start sim
# without running cmake); one older than a source is not; no stamp, or no sim, is not.
source "$(dirname "$0")/common.sh"
export BUILD_DIR="$TMP/build"
mkdir -p "$BUILD_DIR"
unset TRNSIM_SKIP_BUILD
source "$ROOT/scripts/lib.sh"
trn_build_current && fail "no stamp: not current"
printf '#!/bin/sh\n' >"$BUILD_DIR/sim"
chmod +x "$BUILD_DIR/sim"
touch "$TRN_STAMP"
trn_build_current || fail "a stamp newer than every source: current"
touch -d '2000-01-01' "$TRN_STAMP"
trn_build_current && fail "a stamp older than the sources: stale"
touch "$TRN_STAMP"
rm "$BUILD_DIR/sim"
trn_build_current && fail "no sim: not current"
# When current, trn_build runs nothing (no cmake: this build folder was never configured).
printf '#!/bin/sh\n' >"$BUILD_DIR/sim"
chmod +x "$BUILD_DIR/sim"
touch "$TRN_STAMP"
trn_build >"$TMP/out" 2>&1
expect_status 0 $? "trn_build on a current build"
[ ! -f "$BUILD_DIR/CMakeCache.txt" ] || fail "trn_build configured a current build"
finish
