// Oracle test: the GGUF files Gufo writes (the build's sample.gguf and tests/data/good/*.gguf)
// are read by an independent implementation (npm @huggingface/gguf), and Gufo's reader
// (`gufo inspect --json`) agrees with it on every header field, metadata value and tensor.
// Run: GUFO_BINARY=build/default/bin/gufo GUFO_SAMPLE_GGUF=build/default/sample.gguf node --test
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { gguf, GGUFValueType, GGMLQuantizationType } from "@huggingface/gguf";

const binary = process.env.GUFO_BINARY;
const sample = process.env.GUFO_SAMPLE_GGUF;
const goodDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "../data/good");
const goodFiles = readdirSync(goodDir).filter((name) => name.endsWith(".gguf"))
                                      .map((name) => path.join(goodDir, name));

function requireInputs() {
  assert.ok(binary && existsSync(binary), `GUFO_BINARY must name the gufo executable, got '${binary}'`);
  assert.ok(sample && existsSync(sample), `GUFO_SAMPLE_GGUF must name a GGUF file, got '${sample}'`);
}

// NOTE(oracle): 64-bit integers past 2^53 would lose digits in JSON.parse, so integers of 16+
// digits are read as strings and compared as text with the oracle's BigInts.
function inspectJson(file) {
  const text = execFileSync(binary, ["inspect", file, "--json"], { encoding: "utf8" });
  return JSON.parse(text.replace(/([:\[,]\s*)(-?\d{16,})(?=\s*[,\]}])/g, '$1"$2"'));
}

// The spec's value-type names, indexed by GGUFValueType.
const typeNames = ["uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
                   "string", "array", "uint64", "int64", "float64"];

function normalise(value) {
  if (typeof value === "bigint") return value.toString();
  if (Array.isArray(value)) return value.map(normalise);
  return value;
}

async function compareWithOracle(file) {
  const parsed = await gguf(path.resolve(file), { allowLocalFile: true, typedMetadata: true });
  const ours = inspectJson(file);

  assert.equal(parsed.metadata.version, ours.version);
  assert.equal(Number(parsed.metadata.tensor_count), ours.tensor_count);
  assert.equal(Number(parsed.metadata.kv_count), ours.metadata_count);
  assert.equal(Number(parsed.tensorDataOffset), ours.data_offset);

  // Metadata: same keys in the same order, same types, same values.
  const theirKeys = Object.keys(parsed.typedMetadata).filter(
      (key) => !["version", "tensor_count", "kv_count"].includes(key));
  assert.deepEqual(theirKeys, ours.metadata.map((entry) => entry.key));
  for (const entry of ours.metadata) {
    const theirs = parsed.typedMetadata[entry.key];
    assert.equal(typeNames[theirs.type], entry.type, `type of ${entry.key}`);
    if (theirs.type === GGUFValueType.ARRAY) {
      assert.equal(typeNames[theirs.subType], entry.element_type, `element type of ${entry.key}`);
      assert.equal(theirs.value.length, entry.length, `length of ${entry.key}`);
      if (entry.element_type === "array") continue;  // nested: lengths checked, values below
      assert.deepEqual(normalise(theirs.value).slice(0, entry.value.length),
                       entry.value.map(normalise), `values of ${entry.key}`);
    } else if (theirs.type === GGUFValueType.FLOAT32) {
      assert.equal(Math.fround(theirs.value), Math.fround(entry.value), `value of ${entry.key}`);
    } else {
      assert.equal(String(normalise(theirs.value)), String(entry.value), `value of ${entry.key}`);
    }
  }

  // Tensors: same names, types, shapes and offsets, in file order.
  assert.equal(parsed.tensorInfos.length, ours.tensors.length);
  parsed.tensorInfos.forEach((info, index) => {
    const tensor = ours.tensors[index];
    assert.equal(info.name, tensor.name);
    assert.equal(GGMLQuantizationType[info.dtype], tensor.type, `type of ${info.name}`);
    assert.deepEqual(info.shape.map(Number), tensor.shape, `shape of ${info.name}`);
    assert.equal(Number(info.offset), tensor.offset, `offset of ${info.name}`);
  });
  return parsed;
}

test("@huggingface/gguf reads the sample written by the build, and agrees with gufo inspect", async () => {
  requireInputs();
  const parsed = await compareWithOracle(sample);
  assert.deepEqual(parsed.metadata["sample.nested"], [[1, 2, 3], ["x"]]);
  assert.equal(parsed.tensorInfos.length, 7);
});

test("@huggingface/gguf agrees with gufo inspect on every file in tests/data/good", async () => {
  requireInputs();
  assert.ok(goodFiles.length >= 2, `expected good GGUF files in ${goodDir}`);
  for (const file of goodFiles) await compareWithOracle(file);
});
