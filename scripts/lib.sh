# Shared set-up for scripts/*: install missing Debian packages, then configure and build build/.
# Sourced, not run. Honours BUILD_DIR (default build) and BUILD_TYPE (default Release).

TRN_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$TRN_ROOT/build}"
BUILD_TYPE="${BUILD_TYPE:-Release}"

# Everything the build, the tests and the scripts need, all from Debian's archive.
TRN_PACKAGES=(g++ cmake make pkg-config libsystemc-dev libyaml-cpp-dev
    libboost-program-options-dev libgtest-dev nlohmann-json3-dev libmimalloc-dev
    python3 python3-yaml python3-numpy python3-scipy gnuplot-nox python3-dev pybind11-dev
    libopenblas0-pthread python3-torch python3-venv python3-pip python3-setuptools python3-wheel
    python3-pytest)

# The Python that runs the NKI frontend: Debian's, whose packages (python3-numpy) the set-up
# installs, even when another python3 comes first on PATH.
TRN_PYTHON=/usr/bin/python3
[ -x "$TRN_PYTHON" ] || TRN_PYTHON="$(command -v python3)"

# With -h or --help among the arguments: prints the calling script's leading comment (its
# usage) on stdout and exits 0, before anything is installed or built.
trn_help_if_asked() {
    local arg
    for arg in "$@"; do
        case "$arg" in
        -h | --help)
            awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"
            exit 0
            ;;
        esac
    done
}

trn_install_deps() {
    local missing=() installed
    # One dpkg-query for all of them (a call per package costs a tenth of a second in all).
    installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${TRN_PACKAGES[@]}" 2>/dev/null |
        awk '/install ok installed$/ { sub(/:.*/, "", $1); print $1 }')"
    for p in "${TRN_PACKAGES[@]}"; do
        grep -qx "$p" <<<"$installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "trnsim: installing missing Debian packages: ${missing[*]}" >&2
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        if command -v sudo >/dev/null; then
            sudo=(sudo)
        else
            echo "trnsim: not root and no sudo: install ${missing[*]} first" >&2
            return 2
        fi
    fi
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" >&2
}

# The build's stamp: made when a build succeeds, with the time that build started.
TRN_STAMP="$BUILD_DIR/.trnsim-built"

# True when no file the build reads changed since the last successful build.
trn_build_current() {
    [ -f "$TRN_STAMP" ] && [ -x "$BUILD_DIR/sim" ] || return 1
    local newer
    newer="$(find "$TRN_ROOT/CMakeLists.txt" "$TRN_ROOT/models" "$TRN_ROOT/platforms" \
        "$TRN_ROOT/workloads" "$TRN_ROOT/tests" -newer "$TRN_STAMP" \
        \( -name '*.cpp' -o -name '*.h' -o -name 'CMakeLists.txt' -o -name '*.cmake' \) \
        -print -quit 2>/dev/null)"
    [ -z "$newer" ]
}

# Configures build/ the first time and rebuilds whatever is stale (make decides); when no
# source changed since the last successful build, nothing is run (a few hundredths of a
# second). With TRNSIM_SKIP_BUILD=1 (set by the tests, which run inside a build) an existing
# build is used as is.
trn_build() {
    if [ "${TRNSIM_SKIP_BUILD:-}" = 1 ] && [ -x "$BUILD_DIR/sim" ]; then return 0; fi
    trn_build_current && return 0
    trn_install_deps || return $?
    if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
        cmake -S "$TRN_ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="$BUILD_TYPE" \
            -DPython3_EXECUTABLE="$TRN_PYTHON" >&2 || return $?
    fi
    local started
    started="$(mktemp "$BUILD_DIR/.trnsim-building.XXXXXX")"
    if cmake --build "$BUILD_DIR" -j "$(nproc)" >&2; then
        mv -f "$started" "$TRN_STAMP"
    else
        local status=$?
        rm -f "$started"
        return $status
    fi
}

# trn_build with its output kept for when it fails (printed then, to stderr).
trn_build_quiet() {
    local log status
    log="$(mktemp)"
    trn_build >"$log" 2>&1
    status=$?
    [ $status -eq 0 ] || cat "$log" >&2
    rm -f "$log"
    return $status
}
