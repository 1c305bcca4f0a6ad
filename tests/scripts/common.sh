# Helpers for the script tests: a scratch folder and assertions that fail the test.
set -uo pipefail
ROOT="$1"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_status() {  # expect_status WANT GOT WHAT
    [ "$1" -eq "$2" ] || fail "$3: exit status $2, expected $1"
}
expect_grep() {  # expect_grep PATTERN FILE WHAT
    grep -qE -- "$1" "$2" || { fail "$3: no '$1' in $2"; sed 's/^/  | /' "$2" | head -20; }
}
finish() {
    if [ "$failures" -eq 0 ]; then echo "1 passed, 0 failed"; exit 0; fi
    echo "0 passed, 1 failed ($failures assertions)"
    exit 1
}
