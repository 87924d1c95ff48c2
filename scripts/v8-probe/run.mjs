// node scripts/v8-probe/run.mjs WASM MANIFEST.json
import { readFileSync } from "node:fs";
import { performance } from "node:perf_hooks";

const [wasmPath, manifestPath] = process.argv.slice(2);
const module = new WebAssembly.Module(readFileSync(wasmPath));
const text = readFileSync(manifestPath);
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ms) => ms.toFixed(2) + " ms";

const loads = [];
const builds = [];
let jobs = 0;
for (let i = 0; i < 7; i++) {
  // A fresh instance each time: a cold isolate's first load.
  const { exports } = new WebAssembly.Instance(module, {});
  const at = exports.input(text.length);
  new Uint8Array(exports.memory.buffer, at, text.length).set(text);
  let t = performance.now();
  jobs = exports.load(at, text.length);
  loads.push(performance.now() - t);
  if (jobs < 0) throw new Error("the manifest did not load");
  t = performance.now();
  exports.build_plan();
  builds.push(performance.now() - t);
  if (i === 6) {
    const plans = [];
    let due = 0;
    const start = Date.UTC(2026, 2, 2, 0, 0) / 1000;
    for (let m = 1; m <= 1440; m++) {
      const t0 = performance.now();
      due += exports.plan(BigInt(start + 60 * m));
      plans.push(performance.now() - t0);
    }
    const p90 = plans.slice().sort((a, b) => a - b)[Math.floor(plans.length * 0.9)];
    console.log(`plan a minute: median ${fmt(median(plans))}, p90 ${fmt(p90)}, max ${fmt(Math.max(...plans))} (${due} job-slots over a day)`);
  }
}
console.log(`${jobs} jobs, ${text.length} bytes: load median ${fmt(median(loads))} (min ${fmt(Math.min(...loads))}), plan built in ${fmt(median(builds))}`);
