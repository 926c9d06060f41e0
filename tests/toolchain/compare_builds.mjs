// Side-by-side check of two builds of the same source: each `gufo diagnose --json` must report
// the compiler that really built it (its banner equals the first line of `<compiler> --version`)
// and the two machine fingerprints must differ, since the toolchain is part of them.
// Usage: node compare_builds.mjs BUILD_A/bin/gufo COMPILER_A BUILD_B/bin/gufo COMPILER_B
import { execFileSync } from "node:child_process";

function fail(message) {
  console.error(`compare_builds: FAIL: ${message}`);
  process.exit(1);
}

function firstLine(text) {
  return text.split("\n")[0].trim();
}

function check(gufo, compiler) {
  const report = JSON.parse(execFileSync(gufo, ["diagnose", "--json"], { encoding: "utf8" }));
  const banner = firstLine(execFileSync(compiler, ["--version"], { encoding: "utf8" }));
  const reported = report.build.cxx_compiler;
  if (firstLine(reported.banner) !== banner) {
    fail(`${gufo} reports compiler '${reported.banner}', but ${compiler} --version says '${banner}'`);
  }
  if (!banner.includes(reported.version)) {
    fail(`${gufo} reports version ${reported.version}, not in '${banner}'`);
  }
  console.log(`${gufo}: ${reported.id} ${reported.version}, fingerprint ${report.fingerprint.hash}`);
  return report;
}

const [gufoA, compilerA, gufoB, compilerB] = process.argv.slice(2);
if (!compilerB) fail("usage: compare_builds.mjs GUFO_A COMPILER_A GUFO_B COMPILER_B");
const a = check(gufoA, compilerA);
const b = check(gufoB, compilerB);
if (a.fingerprint.hash === b.fingerprint.hash) {
  fail(`both builds have fingerprint ${a.fingerprint.hash}; the toolchain must change it`);
}
const again = JSON.parse(execFileSync(gufoA, ["diagnose", "--json"], { encoding: "utf8" }));
if (again.fingerprint.hash !== a.fingerprint.hash) fail(`${gufoA} changed fingerprint between runs`);
console.log("1 passed, 0 failed");
