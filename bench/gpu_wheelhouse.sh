#!/usr/bin/env bash
# Make .whl/: what bench/gpu_check.py needs on a machine without network that has PyTorch, JAX and
# TensorBoard but not cffi (docs/gpu_check.md): this project's wheel for that machine's Python
# (abi3 extensions) and the cffi and pycparser wheels. Run on a development machine, from the
# repository root:
#     bench/gpu_wheelhouse.sh [PYTHON_VERSION]      # default 3.12
# then copy the tree (with .whl/) over and, there:
#     SITE=$(mktemp -d); python3 -m pip install -q --no-index --no-deps --target "$SITE" .whl/*.whl
#     PYTHONPATH="$SITE" python3 bench/gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
ver=${1:-3.12}
# pyenv's own interpreters first: its shim fails unless that version is a selected one
py=""
root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
for c in $(ls -d "$root"/versions/"$ver"*/bin/python"$ver" 2>/dev/null | sort -rV) $(command -v "python$ver" 2>/dev/null); do
    "$c" -c "import sys; sys.exit('%d.%d' % sys.version_info[:2] != '$ver')" 2>/dev/null && { py=$c; break; }
done
[ -n "$py" ] || { echo "python$ver not found" >&2; exit 1; }
venv=$(mktemp -d)/venv
trap 'rm -rf "$(dirname "$venv")"' EXIT
"$py" -m venv "$venv"
quiet() { "$@" 2>&1 | { grep -v -e '^WARNING: Location' -e 'BuildBackendWarning' -e 'warnings.warn' || true; }; }
quiet "$venv/bin/pip" install -q "setuptools>=77" cffi wheel
rm -rf .whl
quiet "$venv/bin/pip" wheel -q --no-deps --no-build-isolation -w .whl .
quiet "$venv/bin/pip" download -q --no-deps --only-binary=:all: --python-version "$ver" --implementation cp \
    --platform manylinux_2_17_x86_64 -d .whl "cffi==$("$venv/bin/python" -c 'import cffi; print(cffi.__version__)')" pycparser
ls -1 .whl
