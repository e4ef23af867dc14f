# Sourced by the Python interop tests: finds or creates a cached virtual environment with the PyPI
# packages a test needs, and skips the test (exit 77, with the reason) when PyPI cannot be reached.
#   ember_venv NAME PACKAGE...   sets $VENV_PY to the environment's python
# Where: $EMBER_VENVS/NAME, else /work/venvs/NAME when it exists, else ~/.cache/ember/venvs/NAME.
# Created with Debian's /usr/bin/python3 (the python3 first on PATH may be another interpreter).
ember_venv() {
  local name=$1
  shift
  local base=${EMBER_VENVS:-}
  if [[ -z $base ]]; then
    if [[ -d /work/venvs ]]; then base=/work/venvs; else base=$HOME/.cache/ember/venvs; fi
  fi
  local dir=$base/$name
  local py=/usr/bin/python3
  [[ -x $py ]] || py=$(command -v python3)
  if [[ ! -x $dir/bin/python ]]; then
    mkdir -p "$base"
    "$py" -m venv "$dir" >/dev/null 2>&1 || { echo "SKIP: cannot create a venv in $dir ($py -m venv failed; Debian: apt-get install python3-venv)"; exit 77; }
  fi
  local modules=()
  for p in "$@"; do modules+=("${p%%[=<>]*}"); done
  if ! "$dir/bin/python" -c "import ${modules[*]// /, }" >/dev/null 2>&1; then
    if ! timeout 600 "$dir/bin/pip" install -q --disable-pip-version-check "$@" >"$dir/pip-install.log" 2>&1; then
      echo "SKIP: could not install $* from PyPI into $dir (no network?): $(tail -n 2 "$dir/pip-install.log" | tr '\n' ' ')"
      exit 77
    fi
  fi
  VENV_PY=$dir/bin/python
}
