#!/usr/bin/env bash
# Installs everything Gufo builds and tests with, from Debian packages only.
# Idempotent: packages already present are left alone, and apt is only asked when
# something is missing. Run as root (or with sudo available). Usage: scripts/install-deps.sh
set -euo pipefail

# NOTE(deps): g++-12 is the pinned, qualified toolchain (preset `default`); clang-16 is
# the candidate toolchain (presets `clang`, `asan`); libclang-rt-16-dev carries the
# sanitizer and libFuzzer runtimes for clang-16; libicu-dev gives the tokenizer Unicode
# categories and NFC; libedit-dev (BSD editline) gives `gufo chat` its line editing;
# libcpp-httplib-dev is `gufo serve`'s HTTP server; clang-15 with libamdhip64-dev (HIP
# 5.2 headers) and rocm-device-libs compile the GPU backend for AMD (preset `hip`), and
# clang-tools-15's clang-offload-bundler packs each object's host and device code; chromium
# is the headless browser that tests `gufo serve`'s chat page (tests/functional/chat_page.test.mjs,
# driven by npm's puppeteer-core, which brings no browser of its own); json-schema-test-suite is
# the official JSON-Schema-Test-Suite that tests/unit/grammar/json_schema_suite_test.cpp runs
# through the JSON Schema compiler (draft 7 tests, under /usr/share/json-schema-test-suite);
# clang-format-16 is the formatter scripts/check-format.sh holds every C++ and CUDA file to, and
# clang-tidy-16 the static checker of scripts/check-tidy.sh; gnuplot-nox draws the plots of
# `gufo qualify`'s report; dpkg-dev (dpkg-shlibdeps) and file are what CPack's Debian
# packages need (`gufo qualify` stage 6); ccache lets the cuda preset reuse the default preset's
# objects (cmake/GufoCcache.cmake).
PACKAGES=(
  g++-12 clang-16 libclang-rt-16-dev clang-format-16 clang-tidy-16
  clang-15 clang-tools-15 libamdhip64-dev rocm-device-libs
  cmake ninja-build git pkg-config ccache
  libcli11-dev libfmt-dev nlohmann-json3-dev libicu-dev libedit-dev libcpp-httplib-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  chromium json-schema-test-suite gnuplot-nox dpkg-dev file
)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

# Node.js and npm run the independent oracles (tests/js); any node >= 18 will do.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if ((${#missing[@]})); then
  SUDO=""
  if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "install-deps: all ${#PACKAGES[@]} packages present"
fi

# The CUDA toolkit is not a Debian package here; the `cuda` preset needs nvcc 13.x.
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "install-deps: CUDA toolkit found ($(${CUDACXX:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)} --version | tail -n 2 | head -n 1))"
else
  echo "install-deps: no CUDA toolkit found; the 'cuda' preset will not configure (CPU presets are unaffected)"
fi
