#!/bin/bash
# The whole training run on the GPU machine (tools/train/README.md): trains the tokenizer and
# the three models (train.py), then packs the Hugging Face folders, reference logits, metrics
# and log as xz pieces of 15 MB into $OUT (a size that a remote-run tool returning at most 8
# files, 64 MB together, can bring back). Pieces past 60 MB stay in /tmp/gufo_train/pieces for a
# second call to fetch (`cp /tmp/gufo_train/pieces/NAME $OUT/`) while the machine is warm.
#   bash tools/train/device_run.sh CORPUS_DIR [train.py flags...]      e.g. --smoke
set -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=$1
shift
export PYTHONUNBUFFERED=1
work=/tmp/gufo_train
rm -rf "$work"
mkdir -p "$work/pieces"
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv,noheader
python3 "$here/train.py" --corpus "$corpus" --out "$work/out" "$@" 2>&1 | tee "$OUT/run_log.txt"
rc=$?
cp "$work/out/metrics.json" "$OUT/" 2>/dev/null
tar -C "$work" -cf - out | xz -T0 -6 | split -b 15M - "$work/pieces/models.tar.xz."
total=0
for piece in "$work"/pieces/*; do
  size=$(stat -c %s "$piece")
  if (( total + size <= 60000000 )); then
    cp "$piece" "$OUT/"
    total=$((total + size))
  else
    echo "left on the machine: $piece ($size bytes)"
  fi
done
ls -l "$work/pieces"
exit $rc
