# Sourced by the project's scripts (bash): the project's Python is the
# virtual environment scripts/install-deps.sh makes, never the system's.
# Sets kernels_venv and kernels_python and puts the environment's bin/ first
# on PATH, so `python3` and the tools' own lookups of python3 (the CLI
# finds torch through the python3 on PATH) all mean that environment.
# KERNELS_VENV names another folder for it (default: .venv in the
# repository's root).
kernels_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kernels_venv=${KERNELS_VENV:-$kernels_root/.venv}
kernels_python=$kernels_venv/bin/python3
export KERNELS_VENV=$kernels_venv
case ":$PATH:" in
*":$kernels_venv/bin:"*) ;;
*) export PATH="$kernels_venv/bin:$PATH" ;;
esac
