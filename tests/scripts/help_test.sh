#!/usr/bin/env bash
# Every command of scripts/ answers --help (and -h) on stdout with exit status 0, before it
# installs, builds or runs anything (nothing on stderr, within seconds).
source "$(dirname "$0")/common.sh"
n=0
for script in "$ROOT"/scripts/*; do
    [ -f "$script" ] && [ -x "$script" ] || continue
    name="$(basename "$script")"
    for flag in --help -h; do
        timeout 60 "$script" "$flag" >"$TMP/out" 2>"$TMP/err"
        expect_status 0 $? "$name $flag"
        [ -s "$TMP/out" ] || fail "$name $flag: nothing on stdout"
        if [ -s "$TMP/err" ]; then
            fail "$name $flag: stderr is not empty"
            sed 's/^/  | /' "$TMP/err" | head -5
        fi
    done
    n=$((n + 1))
done
[ "$n" -ge 15 ] || fail "only $n commands found in scripts/"
# The defaults a user needs are named: the platform scripts/nki and sim use without --config.
"$ROOT/scripts/nki" --help >"$TMP/out" 2>&1
expect_grep "else$" "$TMP/out" "scripts/nki names its default platform"
expect_grep "^ +trn2 \(the newest NeuronCore" "$TMP/out" "scripts/nki names trn2 as its default"
"$ROOT/scripts/test" --help >"$TMP/out" 2>&1
expect_grep "Defaults: every test" "$TMP/out" "scripts/test names its defaults"
finish
