#!/usr/bin/env bash
# Installs everything tessera needs to build and test, from Debian 12 packages
# only. Run as root, or as a user with sudo. Eigen, oneDNN and the Vulkan
# toolchain (headers, lavapipe, glslc) are for the coming CPU fast paths and
# Vulkan backend; nothing builds against them yet. PLplot and its cairo driver
# draw the plots of `tessera sweep`; zlib lets the plot tests read the PNGs
# back. With --fuzz it also installs clang and libFuzzer for the fuzz targets
# (scripts/fuzz.sh; CI does). The CUDA toolkit is optional and never installed
# here. python3-numpy and python3-jinja2 run the model-family reference checks;
# Node.js installs the pinned reference packages (scripts/install-references.sh).
# unicode-data (with bzip2 to read it) gives tests/unicode the Unicode 15.0
# NormalizationTest.txt conformance file and scripts/gen-unicode-tables.py its input.
# cpp-httplib serves tessera serve's HTTP API; gRPC and protobuf (protoc and
# grpc_cpp_plugin generate the C++ of proto/tessera/v1/runtime.proto at build
# time) its session API, which the Python SDK (sdks/python) calls through
# Debian's python3-grpcio.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config git
  libboost-dev libboost-program-options-dev libboost-filesystem-dev libboost-system-dev
  libeigen3-dev libdnnl-dev libtomlplusplus-dev nlohmann-json3-dev
  libplplot-dev plplot-driver-cairo zlib1g-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libvulkan-dev vulkan-tools mesa-vulkan-drivers glslc glslang-tools spirv-tools
  clang-format
  python3-numpy python3-jinja2 python3-grpcio python3-protobuf
  unicode-data bzip2
  libcpp-httplib-dev libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
)
# Node.js and npm install the pinned reference packages (scripts/install-references.sh);
# Debian's only where the machine has no node of its own.
command -v node >/dev/null || packages+=(nodejs npm)
# The fuzz targets (scripts/fuzz.sh) need clang and libFuzzer: `install-deps.sh --fuzz`.
# CI (--fuzz) also takes ccache (its embedded build compiles most files as its
# release build did) and promtool from Debian's prometheus package, which checks
# tessera serve's /metrics (cli.serve.promtool; skipped without it). Not by
# default: the package also installs a Prometheus server.
if [ "${1:-}" = "--fuzz" ]; then
  packages+=(clang libfuzzer-14-dev ccache prometheus)
fi

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null; then
  as_root=(sudo)
else
  echo "install-deps.sh: run as root (or install sudo) to install: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages are installed"
  exit 0
fi
echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
