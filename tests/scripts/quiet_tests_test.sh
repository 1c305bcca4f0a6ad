#!/usr/bin/env bash
# Tests run without SystemC's copyright banner: no test executable of the build prints it, when
# ctest lists its cases or when one runs, even without SYSTEMC_DISABLE_COPYRIGHT_MESSAGE in the
# environment (the harness sets SystemC's own switch itself).
source "$(dirname "$0")/common.sh"
unset SYSTEMC_DISABLE_COPYRIGHT_MESSAGE
n=0
while IFS= read -r exe; do
    n=$((n + 1))
    "$exe" --gtest_list_tests >"$TMP/list" 2>&1 || fail "$exe --gtest_list_tests"
    first="$(awk '/^[A-Za-z]/ { suite = $1 } /^  [A-Za-z]/ { print suite $1; exit }' "$TMP/list")"
    "$exe" --gtest_filter="$first" >>"$TMP/list" 2>&1 || fail "$exe --gtest_filter=$first"
    if grep -q "Copyright" "$TMP/list"; then
        fail "$(basename "$exe") prints SystemC's banner"
        head -4 "$TMP/list" | sed 's/^/  | /'
    fi
done < <(find "$BUILD_DIR/tests" -type f -name '*_test' -perm -u+x | sort)
[ "$n" -ge 10 ] || fail "only $n test executables found in $BUILD_DIR/tests"
finish
