#!/usr/bin/env bash
# bench/systemc_rate, scripts/bench's reference: its JSON line counts the wake-ups it was given
# and a positive rate; a bad count is an error naming it, exit status 2.
source "$(dirname "$0")/../scripts/common.sh"
rate="$BUILD_DIR/bench/systemc_rate"
SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 "$rate" 1000 >"$TMP/out" 2>&1
expect_status 0 $? "1000 wake-ups"
python3 -c "import json, sys; d = json.loads(open(sys.argv[1]).read().splitlines()[-1]); \
assert d['wakeups'] == 1000 and d['rate'] > 0 and d['seconds'] > 0, d" "$TMP/out" ||
    fail "the JSON line"
for bad in 0 -5 12x abc ""; do
    "$rate" "$bad" >"$TMP/bad" 2>&1
    expect_status 2 $? "WAKEUPS '$bad'"
    expect_grep "systemc_rate: error: WAKEUPS '$bad' is not a whole number" "$TMP/bad" "'$bad' named"
done
"$rate" 1 2 >"$TMP/two" 2>&1
expect_status 2 $? "two arguments"
"$ROOT/scripts/bench" --repeat 0 >"$TMP/rep" 2>&1
expect_status 2 $? "scripts/bench --repeat 0"
expect_grep "repeat must be at least 1" "$TMP/rep" "--repeat named"
finish
