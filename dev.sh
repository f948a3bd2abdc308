#!/usr/bin/env bash
# One entry point for a fresh machine: sets everything up, then runs a job.
#   ./dev.sh demo    set up, run the demo training with tb_iotrace, print the report, start TensorBoard
#   ./dev.sh test    set up, run the whole test suite (C + sanitizers, JavaScript, Python, TensorFlow, browser)
#   ./dev.sh quick   set up, run the quick tests: C (plain build), JavaScript, Python unit tests not marked
#                    slow/tf/jax/torch/browser (about a minute); extra arguments go to pytest
#   ./dev.sh setup   set up only (the venv, the native modules, the tab's bundle: pip install -e .)
# Set-up is idempotent: apt packages only when missing, the venv is cached under
# ~/.cache/tb_iotrace keyed by the hash of requirements-dev.txt and pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
job=${1:-help}

log() { printf '[dev.sh] %s\n' "$*" >&2; }
# pip, minus the noise of this machine's pip.conf (find-links that do not exist)
pipq() { "$@" 2>&1 | { grep -v -e '^WARNING: Location' -e 'BuildBackendWarning' -e 'warnings.warn' || true; }; }

apt_install() {
    local missing=()
    for pair in "$@"; do
        local cmd=${pair%%:*} pkg=${pair#*:}
        command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    log "installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

setup() {
    apt_install gcc:gcc cmake:cmake strace:strace gdb:gdb chromium:chromium node:nodejs java:default-jre-headless
    local py=${PYTHON:-python3}
    "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { log "Python 3.11+ required"; exit 1; }
    local key
    key=$(cat requirements-dev.txt pyproject.toml | sha256sum | cut -c1-16)
    VENV=${TBIO_VENV:-$HOME/.cache/tb_iotrace/venv-$key}
    if [ ! -f "$VENV/.ready" ]; then
        log "creating venv $VENV"
        rm -rf "$VENV"
        "$py" -m venv "$VENV"
        pipq "$VENV/bin/pip" install -q --upgrade pip
        pipq "$VENV/bin/pip" install -q -r requirements-dev.txt
        touch "$VENV/.ready"
    fi
    # a venv made before the build needed setuptools 77 (`license` as an SPDX string)
    "$VENV/bin/python" -c 'import sys, setuptools; sys.exit(int(setuptools.__version__.split(".")[0]) < 77)' \
        2>/dev/null || pipq "$VENV/bin/pip" install -q "setuptools>=77"
    log "building the native shim"
    pipq "$VENV/bin/pip" install -q --no-build-isolation --no-deps -e .
    "$VENV/bin/python" -c 'import tb_iotrace._native, tb_iotrace._codec' || { log "native build failed"; exit 1; }
    export PATH="$VENV/bin:$PATH"
    setup_py312
}

# Keras 3 profiles the JAX backend only on Python >= 3.12: a small second venv (keras, jax and
# what Keras's TensorBoard callback needs; tb_iotrace itself comes from this tree on PYTHONPATH,
# its abi3 modules built above) for tests/integration/test_jax_keras.py, which finds it through
# TBIO_PY312 (or the same cache key).
find_py312() {
    # pyenv's own interpreters first: its python3.12 shim fails unless 3.12 is a selected version
    local root c
    root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
    for c in $(ls -d "$root"/versions/3.12*/bin/python3.12 2>/dev/null | sort -rV) $(command -v python3.12 2>/dev/null); do
        "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { echo "$c"; return 0; }
    done
    return 0
}

setup_py312() {
    local py key
    py=$(find_py312)
    if [ -z "$py" ]; then
        log "no Python 3.12 found (PATH, pyenv): the Keras-on-JAX test will fail and say so"
        return 0
    fi
    key=$(sha256sum requirements-py312.txt | cut -c1-16)
    local venv=$HOME/.cache/tb_iotrace/venv312-$key
    if [ ! -f "$venv/.ready" ]; then
        log "creating venv $venv (Keras on JAX, Python 3.12)"
        rm -rf "$venv"
        "$py" -m venv "$venv"
        pipq "$venv/bin/pip" install -q -r requirements-py312.txt
        touch "$venv/.ready"
    fi
    export TBIO_PY312="$venv/bin/python"
}

# C tests, one build per sanitizer named (default: none, address, thread)
c_tests() {
    local rc=0 sans=("$@")
    [ ${#sans[@]} -gt 0 ] || sans=(none address thread)
    for san in "${sans[@]}"; do
        local dir="$ROOT/build/c-$san"
        cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTBIO_SANITIZE="${san/none/}" >/dev/null
        cmake --build "$dir" -j2 >/dev/null
        log "C tests ($san)"
        ctest --test-dir "$dir" --output-on-failure || rc=1
    done
    return $rc
}

# The frontend's pure modules and its bundle (node's own test runner, no npm package).
js_tests() {
    log "JavaScript tests"
    node --test --test-reporter=spec tests/frontend/
}

case "$job" in
    setup) setup ;;
    test)
        setup
        rc=0
        c_tests || rc=1
        js_tests || rc=1
        log "Python tests"
        "$VENV/bin/python" -m pytest -q -n 2 -p no:cacheprovider tests "${@:2}" || rc=1
        exit $rc
        ;;
    quick)
        setup
        rc=0
        c_tests none || rc=1
        js_tests || rc=1
        log "Python unit tests (quick: without the slow, framework and browser ones)"
        "$VENV/bin/python" -m pytest -q -n 2 -p no:cacheprovider \
            -m "not slow and not tf and not jax and not torch and not browser and not spark and not fuzz" tests/unit "${@:2}" || rc=1
        exit $rc
        ;;
    demo)
        setup
        exec "$VENV/bin/python" examples/demo.py "${@:2}"
        ;;
    *)
        sed -n '2,9p' "$0"
        exit 2
        ;;
esac
