// The swimlane viewer in a real browser (Debian's chromium, driven by
// playwright-core; no browser is downloaded). A real PTO run (the lightning
// indexer, run by tests/trace_app with PTO_TRACE) becomes a page with
// pto-trace html; the test checks that every task is drawn, that no script
// fails, that hovering shows a task and clicking one highlights exactly its
// producers and consumers, and saves a screenshot (build/artifacts/). A
// synthetic 100 000-task trace measures pan and zoom frame times.
//   PTO_BUILD=build node --test swimlane.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const build = resolve(root, process.env.PTO_BUILD || 'build');
const artifacts = resolve(build, 'artifacts');
const ptoTrace = join(build, 'tools', 'pto-trace');
const traceApp = join(build, 'tests', 'trace_app');
const work = mkdtempSync(join(tmpdir(), 'pto-browser-'));

let context;
const pageErrors = [];

before(async () => {
  mkdirSync(artifacts, { recursive: true });
  context = await chromium.launchPersistentContext(join(work, 'profile'), {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 640 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync'],
  });
  // nothing may leave the machine: the page is self-contained
  await context.route(/^(?!file:|data:|about:)/, (route) => route.abort());
});

after(async () => {
  if (context) await context.close();
  rmSync(work, { recursive: true, force: true });
});

// A page for a trace file, with its errors collected.
async function open(html) {
  const page = await context.newPage();
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(m.text()); });
  page.on('requestfailed', (r) => pageErrors.push('request ' + r.url()));
  await page.goto('file://' + html);
  await page.waitForFunction(() => window.ptoViewer !== undefined);
  return page;
}

function render(trace, html) {
  execFileSync(ptoTrace, ['html', trace, '-o', html], { stdio: 'pipe' });
}

// producers and consumers per task, from the trace file itself
function relations(trace) {
  const events = trace.traceEvents.filter((e) => e.ph === 'X');
  const prod = new Map(), cons = new Map();
  for (const e of events) {
    prod.set(e.args.task, e.args.producers.slice().sort((a, b) => a - b));
    if (!cons.has(e.args.task)) cons.set(e.args.task, []);
    for (const p of e.args.producers) {
      if (!cons.has(p)) cons.set(p, []);
      cons.get(p).push(e.args.task);
    }
  }
  for (const v of cons.values()) v.sort((a, b) => a - b);
  return { events, prod, cons };
}

test('the page of a real run draws every task, highlights exactly the dependencies, and has no script errors', async () => {
  const tracePath = join(work, 'indexer.json'), html = join(work, 'indexer.html');
  const env = { ...process.env, PTO_TRACE: tracePath, PTO_THREADS: '2' };
  delete env.PTO_CONFIG;
  const out = execFileSync(traceApp, ['indexer', '3'], { env }).toString();
  assert.match(out, /workload indexer tasks \d+ workers 2 runs 3 ok/);
  render(tracePath, html);
  const trace = JSON.parse(readFileSync(tracePath, 'utf8'));
  const { events, prod, cons } = relations(trace);
  assert.ok(events.length > 1 && [...prod.values()].some((p) => p.length), 'a run with dependencies');

  const page = await open(html);
  const v = await page.evaluate(() => ({ tasks: ptoViewer.tasks, drawn: ptoViewer.drawn }));
  assert.equal(v.tasks, trace.pto.tasks);
  assert.equal(v.drawn, trace.pto.tasks, 'every task drawn at the whole-run zoom');

  // hover: the tooltip names the task and its time per instruction
  const first = events[0].args.task;
  await page.evaluate((k) => ptoViewer.focus(k), first);
  let pt = await page.evaluate((k) => ptoViewer.taskPoint(k), first);
  await page.mouse.move(pt.x, pt.y);
  const tip = await page.locator('#tip').innerText();
  assert.match(tip, new RegExp('task ' + first + '\\b'));
  assert.match(tip, /time per instruction/);
  assert.match(tip, /tiles \(global windows/);
  // a score task's matmul shows its rate: the trace's flops over its ns
  const mm = events.find((e) => e.args.flops && e.args.flops.TMATMUL_RELU_WSUM_G);
  assert.ok(mm, 'a score task with its flops in the trace');
  await page.evaluate((k) => ptoViewer.focus(k), mm.args.task);
  pt = await page.evaluate((k) => ptoViewer.taskPoint(k), mm.args.task);
  await page.mouse.move(pt.x, pt.y);
  const rate = mm.args.flops.TMATMUL_RELU_WSUM_G / mm.args.ops.TMATMUL_RELU_WSUM_G;
  assert.match(await page.locator('#tip').innerText(), new RegExp(rate.toFixed(1) + ' GFLOP/s'));

  // click every task (zoomed onto it): exactly its producers and consumers
  for (const e of events) {
    const k = e.args.task;
    await page.evaluate((t) => ptoViewer.focus(t), k);
    pt = await page.evaluate((t) => ptoViewer.taskPoint(t), k);
    assert.ok(pt.w >= 4, `task ${k} is wide enough to click (${pt.w}px)`);
    await page.mouse.click(pt.x, pt.y);
    const h = await page.evaluate(() => ptoViewer.highlighted);
    assert.equal(h.selected, k, `the click selected task ${k}`);
    assert.deepEqual(h.producers.sort((a, b) => a - b), prod.get(k), `producers of ${k}`);
    assert.deepEqual(h.consumers.sort((a, b) => a - b), cons.get(k), `consumers of ${k}`);
    const panel = await page.locator('#panel').innerText();
    assert.match(panel, new RegExp(`producers \\(${prod.get(k).length}\\)`));
    assert.match(panel, new RegExp(`consumers \\(${cons.get(k).length}\\)`));
  }

  // the legend hides a label and shows it again
  await page.evaluate(() => ptoViewer.fit());
  const labels = [...new Set(events.map((e) => e.name))];
  const n0 = events.filter((e) => e.name === labels[0]).length;
  const item = page.locator('#legend .item', { hasText: labels[0] }).first();
  await item.click();
  await page.evaluate(() => ptoViewer.draw());
  assert.equal(await page.evaluate(() => ptoViewer.drawn), events.length - n0);
  await item.click();
  await page.evaluate(() => ptoViewer.draw());
  assert.equal(await page.evaluate(() => ptoViewer.drawn), events.length);

  // the screenshot: of the tasks wide enough to see, the one with the most
  // dependencies selected
  const wide = events.filter((e) => e.dur * 1e3 >= trace.pto.makespan_ns * 0.02);
  const busiest = (wide.length ? wide : events).map((e) => e.args.task)
    .sort((a, b) => prod.get(b).length + cons.get(b).length - prod.get(a).length - cons.get(a).length)[0];
  await page.evaluate((k) => { ptoViewer.fit(); ptoViewer.select(k); }, busiest);
  await page.click('#crit');
  await page.waitForTimeout(100);
  await page.screenshot({ path: join(artifacts, 'swimlane.png') });
  assert.deepEqual(await page.evaluate(() => ptoViewer.errors), []);
  assert.deepEqual(pageErrors, []);
  await page.close();
});

// A synthetic trace of n tasks on w workers in the format PTO writes:
// chains of dependent tasks over 6 labels, a few producers each.
function synthetic(n, w) {
  const labels = ['indexer.qk', 'indexer.topk', 'sfa.gather', 'sfa.qk', 'sfa.softmax', 'sfa.pv'];
  const free = new Float64Array(w), ends = new Float64Array(n);
  const events = [];
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
  for (let k = 0; k < n; k++) {
    const producers = [];
    for (let j = 0; j < 3 && k > 8; j++) producers.push(k - 1 - Math.floor(rnd() * Math.min(k, 64)));
    const ready = producers.reduce((m, p) => Math.max(m, ends[p]), 0);
    let wk = 0;
    for (let i = 1; i < w; i++) if (free[i] < free[wk]) wk = i;
    const start = Math.max(ready, free[wk]) + rnd() * 200;
    const dur = 500 + rnd() * 4000;
    ends[k] = free[wk] = start + dur;
    events.push({ ph: 'X', pid: 1, tid: wk, ts: start / 1e3, dur: dur / 1e3, name: labels[k % 6], cat: 'vector',
      args: { task: k, program: 'p' + (k % 6) + ':TLOAD.TADD.TSTORE', producers: [...new Set(producers)],
        ops: { TLOAD: Math.round(dur * 0.3), TADD: Math.round(dur * 0.5), TSTORE: Math.round(dur * 0.15) },
        instances: 1, windows: [{ r: ['X[' + k + ':' + (k + 1) + ',0:64]'], w: ['Y[' + k + ':' + (k + 1) + ',0:64]'] }] } });
  }
  const makespan = Math.ceil(Math.max(...free));
  return { displayTimeUnit: 'ns',
    pto: { format: 'pto-trace', version: 2, machine: 'synthetic', makespan_ns: makespan, tasks: n, edges: 0,
      workers: Array.from({ length: w }, (_, i) => ({ id: i, serves: i < w / 3 ? 'cube' : 'vector', pu: i })) },
    traceEvents: events };
}

test('pan and zoom stay under 50 ms a frame with 100 000 tasks', async () => {
  const n = 100000;
  const tracePath = join(work, 'big.json'), html = join(work, 'big.html');
  writeFileSync(tracePath, JSON.stringify(synthetic(n, 24)));
  const t0 = Date.now();
  render(tracePath, html);
  const renderMs = Date.now() - t0;
  const page = await open(html);
  const drawn = await page.evaluate(() => ptoViewer.drawn);
  assert.equal(drawn, n, 'every task drawn at the whole-run zoom');
  const stat = (xs) => { const s = xs.slice().sort((a, b) => a - b);
    return { median: s[s.length >> 1], p95: s[Math.floor(s.length * 0.95)], max: s[s.length - 1] }; };
  // 10 frames first, not counted: the JIT compiles the drawing loop. The
  // machine is shared: a batch slowed by the neighbours is measured again,
  // up to three times, and the best batch counts.
  const fmt = (s) => `median ${s.median.toFixed(1)} ms, p95 ${s.p95.toFixed(1)} ms, max ${s.max.toFixed(1)} ms`;
  let whole, zoomed;
  await page.evaluate(() => ptoViewer.bench(10));
  for (let attempt = 1; attempt <= 3; attempt++) {
    const w = stat(await page.evaluate(() => { ptoViewer.fit(); return ptoViewer.bench(60); }));
    const z = stat(await page.evaluate(() => { ptoViewer.fit(); ptoViewer.zoomAt(600, 0.05); return ptoViewer.bench(60); }));
    if (!whole || w.median < whole.median) whole = w;
    if (!zoomed || z.median < zoomed.median) zoomed = z;
    console.log(`# 100000 tasks on 24 workers, batch ${attempt}: pto-trace html ${renderMs} ms; ` +
      `frames over the whole run: ${fmt(w)}; zoomed in 20x: ${fmt(z)}`);
    if (whole.median < 50 && zoomed.median < 50) break;
  }
  assert.ok(whole.median < 50, `whole-run frames: ${fmt(whole)}`);
  assert.ok(zoomed.median < 50, `zoomed frames: ${fmt(zoomed)}`);
  assert.deepEqual(await page.evaluate(() => ptoViewer.errors), []);
  assert.deepEqual(pageErrors, []);
  await page.close();
});
