#!/usr/bin/env bash
# Packs executables built here so that they run on a GPU machine that lacks Gufo's Debian
# libraries: writes one xz tar to stdout with bin/ (the stripped executables) and lib/ (the
# shared libraries they need, except the C/C++ runtime and CUDA, which that machine has).
# Used by scripts/gpu-pack.sh and tools/bench/pack_llama_cpp.sh.
# Usage: scripts/pack-binaries.sh BINARY... > PACK.tar.xz
set -euo pipefail
[[ $# -ge 1 ]] || { echo "usage: pack-binaries.sh BINARY... > PACK.tar.xz" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/lib"
# NOTE(pack): the C/C++ runtime and the CUDA libraries come from the GPU machine itself (a
# newer glibc and libstdc++ run binaries built against older ones; CUDA must match its driver).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libstdc\+\+|libgcc_s|libpthread|libdl\.so|librt\.so|libcuda\.so|libcudart|libcublas|libcublasLt|libnccl)'
for bin in "$@"; do
  strip -o "$work/bin/$(basename "$bin")" "$bin"
  ldd "$bin" | awk '/=> \//{print $1, $3}' | while read -r name path; do
    [[ $name =~ $skip ]] && continue
    [[ -f $work/lib/$name ]] || cp -L "$path" "$work/lib/$name"
  done
done
# NOTE(pack): ICU's data library is 30 MB, more than the GPU machine's transfer limit leaves
# once the repository's models travel too. What Gufo uses of ICU (character properties, NFC)
# is compiled into libicuuc itself, so the pack carries ICU's "stub data" library instead: the
# same soname and entry symbol with an empty table of contents (as ICU's own stubdata builds).
# The tokenizer's tests pass against it (checked when this was written, ICU 72).
for data in "$work"/lib/libicudata.so.*; do
  [[ -e $data ]] || continue
  version=${data##*.so.}
  cat >"$work/stub.c" <<STUB
#include <stdint.h>
typedef struct { uint16_t size, reserved_word; uint8_t big_endian, charset_family, sizeof_uchar, reserved_byte;
  uint8_t data_format[4], format_version[4], data_version[4]; } Info;
typedef struct { uint16_t header_size; uint8_t magic1, magic2; Info info; char padding[8];
  uint32_t count, reserved; uint32_t toc[2]; int fake[4]; } Header;
__attribute__((visibility("default"))) const Header icudt${version}_dat = {
  32, 0xda, 0x27, {sizeof(Info), 0, 0, 0, 2, 0, {0x54, 0x6f, 0x43, 0x50}, {1, 0, 0, 0}, {0, 0, 0, 0}},
  {0}, 0, 0, {0, 0}, {0, 0, 0, 0}};
STUB
  gcc -shared -fPIC -o "$data" -Wl,-soname,"$(basename "$data")" "$work/stub.c"
  rm "$work/stub.c"
done
tar cf - -C "$work" bin lib | xz -T0 -6
