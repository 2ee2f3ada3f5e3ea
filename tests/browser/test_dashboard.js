// tests/browser/test_dashboard.js - the budget dashboard (web/) end to end in
// headless Chromium driven by playwright-core, against the REAL dnnsatd
// ($top_builddir/dnnsatd on a free loopback port, in-memory cache).
//
//   desktop (1440x1000): the resnet template, its example space and the
//     a100-40gb; the count equals the API's; the memory slider moved by
//     keyboard changes the count to what the API answers for that budget;
//     a removed value explained; a heat map equal to the API's; a picked
//     configuration's memory breakdown; the safe estimate selected (fewer
//     fit, as the API says, marked on the bar, kept in the link); the next page; an API error shown
//     next to its field; a reduction still counting (202) shown as bounds;
//     the downloaded search_space.json equal to the API's reduced_space;
//     a reload keeps the inputs (the URL fragment) and the link opened
//     elsewhere reproduces the view (query, heat map axes, picked
//     configuration); a link too long for its space says so; warnings
//     shown; an error clears every panel; the download keeps the user's key
//     order; a nested space's configuration kept across queries and edited
//     by address; violations written as the CLI writes them; nothing fits:
//     the conflict shown as the API gives it, and its button moves the
//     memory to the exact limit where something fits (the latency slider to
//     the first position above it), and the shape rules no configuration
//     satisfies are named, also under a removed value's explanation;
//     fine-tuning (LoRA, 4-bit base weights) sent in the workload, more
//     fitting as the API says, kept in the link, off for inference; the
//     link to the
//     AutoML payoff results;
//   phone (390x844, touch): the same first load, nothing wider than the
//     screen.
// Screenshots go to tests/browser/artifacts/ (desktop.png, phone.png) and are
// checked: PNGs of the expected size whose pixels are not all alike.
//
// Needs node >= 18 and Chromium ($CHROMIUM, default /usr/bin/chromium).
// Prints one line per failed check and "N passed, M failed"; exit 1 on any
// failure. DNNSAT_BROWSER_VERBOSE=1 prints each step and its time.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { spawn, spawnSync } = require('node:child_process');
const os = require('node:os');
const { chromium } = require('playwright-core');

const TOP_SRCDIR = process.env.top_srcdir || '.';
const TOP_BUILDDIR = process.env.top_builddir || '.';
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, 'artifacts');
const VERBOSE = !['', '0', undefined].includes(process.env.DNNSAT_BROWSER_VERBOSE);
const T0 = Date.now();
const STEP_TIMEOUT = 20000;

let passed = 0;
let failed = 0;
let base = '';

function log(msg) {
	if (VERBOSE)
		console.log(`[${((Date.now() - T0) / 1000).toFixed(1)} s] ${msg}`);
}

// Runs the steps of a phase in order; the first failure ends the phase
// (the later steps build on it) after a screenshot of the page.
async function phase(name, page, steps) {
	for (const [what, fn] of steps) {
		log(`${name}: ${what}`);
		try {
			await fn();
			passed++;
		} catch (e) {
			failed++;
			console.log(`FAIL ${name}: ${what}: ${e.message.split('\n').slice(0, 14).join('\n    ')}`);
			await page.screenshot({ path: path.join(ARTIFACTS, `failure-${name}.png`), fullPage: true }).catch(() => {});
			return;
		}
	}
}

// ---- the daemon ----

// the daemon's stderr so far: its log and access log (each request's status
// and time; a dropped or failed request says why), printed when a step fails
let daemonLog = () => '';

function startDaemon() {
	const bin = path.resolve(TOP_BUILDDIR, 'dnnsatd');
	const env = { ...process.env, DNNSAT_DATA_DIR: process.env.DNNSAT_DATA_DIR || path.join(TOP_SRCDIR, 'schemas'),
		DNNSAT_WEB_DIR: path.join(TOP_SRCDIR, 'web') };
	const child = spawn(bin, ['--listen', '127.0.0.1:0', '--access-log', '-'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
	let stderr = '';
	child.stderr.on('data', (d) => { stderr += d; });
	daemonLog = () => stderr;
	return new Promise((resolve, reject) => {
		let out = '';
		const timer = setTimeout(() => reject(new Error(`${bin} did not say where it listens: ${stderr}`)), 20000);
		child.on('error', (e) => reject(new Error(`cannot start ${bin}: ${e.message}`)));
		child.on('exit', (code) => reject(new Error(`${bin} exited (${code}): ${stderr}`)));
		child.stdout.on('data', (d) => {
			out += d;
			const m = /listening on (http:\/\/127\.0\.0\.1:\d+)\//.exec(out);
			if (m) {
				clearTimeout(timer);
				resolve({ child, url: m[1] });
			}
		});
	});
}

async function api(method, p, body) {
	const res = await fetch(base + p, {
		method, headers: body ? { 'Content-Type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined,
	});
	return { status: res.status, data: await res.json() };
}

// ---- the page ----

const isReductionPost = (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/v1/reductions';
const isPath = (re) => (r) => re.test(new URL(r.url()).pathname);

// Runs action() and waits for the query it causes: the POST's request body
// and answer once the page has shown it (no longer busy).
async function solved(page, action) {
	const response = page.waitForResponse(isReductionPost, { timeout: STEP_TIMEOUT });
	await action();
	const r = await response;
	const answer = await r.json();
	await page.waitForFunction(() => document.getElementById('summary-card').getAttribute('aria-busy') === 'false',
		null, { timeout: STEP_TIMEOUT });
	return { sent: r.request().postDataJSON(), answer };
}

// Pastes text into a textarea as a user does: one input event (fill()
// types it in, which takes seconds for a model file).
async function paste(page, selector, text) {
	await page.focus(selector);
	await page.$eval(selector, (el, t) => {
		el.value = t;
		el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertFromPaste' }));
	}, text);
}

const shownCount = (page) => page.$eval('#feasible-count', (el) => ({ text: el.textContent, raw: el.dataset.feasible }));

// The same query from this test, straight to the API.
async function apiAnswer(sent) {
	const { status, data } = await api('POST', '/v1/reductions', { ...sent, timeout: 30 });
	assert.ok(status === 200 || status === 201, `POST /v1/reductions answered ${status}: ${JSON.stringify(data)}`);
	return data;
}

// Opens the page and picks, as a user would, the resnet template, its
// example space and the a100-40gb (after another GPU, so that the pick is a
// new query even where those are the page's defaults).
const POLL = /^\/v1\/reductions\/([0-9a-f]+)$/;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// From now on the page's deadline is cut to 0.3 s, so that the answers are
// 202s, and each poll of a reduction reaches the server 1.5 s late, so that
// the bounds stay on the page long enough to be read. Answers the first
// poll of each reduction as it comes: a Map id -> request.
async function slowCounts(page) {
	const polls = new Map();
	page.on('request', (r) => {
		const m = POLL.exec(new URL(r.url()).pathname);
		if (m && !polls.has(m[1]))
			polls.set(m[1], r);
	});
	await page.route('**/v1/reductions', (route) => route.request().method() === 'POST'
		? route.continue({ postData: JSON.stringify({ ...route.request().postDataJSON(), timeout: 0.3 }) })
		: route.continue());
	await page.route((url) => POLL.test(url.pathname), (route) => setTimeout(() => route.continue().catch(() => {}), 1500));
	return polls;
}

// A 202 answer is shown as bounds while the page polls with a timeout (the
// page shows an answer before it polls; the poll's answer comes >= 1.5 s
// later).
async function showsBounds(page, response, polls) {
	assert.equal(response.status(), 202, await response.text());
	const { id, feasible_lower: lower, feasible_upper: upper } = await response.json();
	for (const t0 = Date.now(); !polls.has(id); await sleep(20))
		assert.ok(Date.now() - t0 < STEP_TIMEOUT, `no poll of reduction ${id}`);
	assert.ok(new URL(polls.get(id).url()).searchParams.get('timeout'), 'the poll has no timeout');
	const shown = await shownCount(page);
	assert.equal(shown.raw, '');
	const bounds = /^([0-9,]+|[0-9.]+ × 10[⁰¹²³⁴⁵⁶⁷⁸⁹]+) – ([0-9,]+|[0-9.]+ × 10[⁰¹²³⁴⁵⁶⁷⁸⁹]+)$/.exec(shown.text);
	assert.ok(bounds, `"${shown.text}" are not bounds`);
	if (upper.length <= 15)
		assert.deepEqual([bounds[1], bounds[2]].map((b) => b.replace(/,/g, '')), [lower, upper]);
	assert.match(await page.textContent('#status'), /counting/);
	// the heat map waits for the exact count: asked for now, it would hold
	// the reduction and a solver worker until its deadline
	assert.match(await page.textContent('#heatmap'), /drawn once the count is exact/);
}

async function firstLoad(page) {
	await solved(page, () => page.goto(base + '/'));
	await page.waitForSelector('body[data-ready="true"]', { timeout: STEP_TIMEOUT });
	await solved(page, () => page.selectOption('#device', 't4'));
	return solved(page, async () => {
		await page.selectOption('#template', 'resnet');
		await page.click('#space-example');
		await page.selectOption('#device', 'a100-40gb');
	});
}

// After a query with an error: no panel shows the previous answer.
async function noStalePanels(page) {
	await page.waitForFunction(() => document.getElementById('feasible-count').textContent === '–', null,
		{ timeout: STEP_TIMEOUT });
	const left = await page.evaluate(() => ({
		count: document.getElementById('feasible-count').dataset.feasible,
		download: document.getElementById('download').disabled,
		axes: document.querySelectorAll('#hm-x option, #hm-y option').length,
		heatmap: document.querySelectorAll('#heatmap *').length,
		domains: document.querySelectorAll('#domains .dom-row').length,
		configs: document.querySelectorAll('#configs tr').length,
		editor: document.querySelectorAll('#editor select').length,
		breakdown: document.querySelectorAll('#breakdown *').length,
		warnings: document.getElementById('warnings').hidden,
	}));
	assert.deepEqual(left, { count: '', download: true, axes: 0, heatmap: 0, domains: 0, configs: 0, editor: 0, breakdown: 0,
		warnings: true });
}

// ---- PNG checks ----

// {width, height, distinct}: the size from IHDR, and how many distinct
// bytes the inflated image data has (a blank page has a handful).
function pngFacts(file) {
	const buf = fs.readFileSync(file);
	assert.equal(buf.subarray(0, 8).toString('hex'), '89504e470d0a1a0a', `${file} is not a PNG`);
	const width = buf.readUInt32BE(16), height = buf.readUInt32BE(20);
	const idat = [];
	for (let off = 8; off < buf.length;) {
		const len = buf.readUInt32BE(off), type = buf.toString('ascii', off + 4, off + 8);
		if (type === 'IDAT')
			idat.push(buf.subarray(off + 8, off + 8 + len));
		off += 12 + len;
	}
	const pixels = zlib.inflateSync(Buffer.concat(idat));
	const seen = new Set();
	for (let i = 0; i < pixels.length && seen.size < 256; i += 7)
		seen.add(pixels[i]);
	return { width, height, bytes: buf.length, distinct: seen.size };
}

function checkPng(file, width, minHeight) {
	const f = pngFacts(file);
	assert.equal(f.width, width, `${file}: width ${f.width}, want ${width}`);
	assert.ok(f.height >= minHeight, `${file}: height ${f.height} < ${minHeight}`);
	assert.ok(f.bytes > 40000, `${file}: only ${f.bytes} bytes`);
	assert.ok(f.distinct > 100, `${file}: only ${f.distinct} distinct byte values: a blank page?`);
	log(`${path.basename(file)}: ${f.width}x${f.height}, ${f.bytes} bytes`);
}

// ---- the phases ----

async function desktop(browser) {
	const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, acceptDownloads: true });
	const page = await context.newPage();
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	let first, second, polls, picked;

	await phase('desktop', page, [
		['first load: resnet + example space + a100-40gb', async () => {
			first = await firstLoad(page);
			assert.equal(first.sent.model, 'resnet');
			assert.equal(first.sent.device, 'a100-40gb');
			assert.deepEqual(Object.keys(first.sent.space), ['batch_size', 'block', 'layers3', 'width', 'resolution', 'lr']);
			const shown = await shownCount(page);
			assert.equal(shown.raw, first.answer.feasible);
			assert.equal(shown.text.replace(/,/g, ''), first.answer.feasible);
		}],
		['the memory slider ends at the device\'s usable memory (T4: 14912 MiB, torch total_memory)', async () => {
			const t4 = await solved(page, () => page.selectOption('#device', 't4'));
			const usable = 14912 * 2 ** 20;
			assert.equal(t4.sent.budgets.memory, `${usable}B`);
			assert.equal(Number(await page.$eval('#memory-out', (el) => el.dataset.bytes)), usable);
			assert.deepEqual(t4.answer.warnings, []);
			assert.equal(t4.answer.budgets.memory.text, '14.56 GiB');
			assert.ok(await page.$eval('#warnings', (el) => el.hidden), 'no warning shown');
			const back = await solved(page, () => page.selectOption('#device', 'a100-40gb'));
			assert.equal(back.sent.budgets.memory, first.sent.budgets.memory);
		}],
		['memory slider (keyboard) changes the count to the API\'s', async () => {
			second = await solved(page, async () => {
				await page.focus('#memory');
				await page.keyboard.press('End');
				for (let i = 0; i < 9; i++)
					await page.keyboard.press('PageDown');
			});
			const bytes = Number(await page.$eval('#memory-out', (el) => el.dataset.bytes));
			assert.match(first.sent.budgets.memory, /^[0-9]+B$/, 'a size with its unit');
			assert.ok(bytes < parseFloat(first.sent.budgets.memory), `memory budget ${bytes} not lowered`);
			assert.equal(second.sent.budgets.memory, `${bytes}B`);
			const shown = await shownCount(page);
			assert.notEqual(shown.raw, first.answer.feasible, 'the count did not change');
			const own = await apiAnswer({ ...first.sent, budgets: { memory: `${bytes}B` } });
			assert.equal(shown.raw, own.feasible, `shown ${shown.raw}, the API says ${own.feasible} for ${bytes} bytes`);
			second.own = own;
		}],
		['a reload keeps the inputs (the URL fragment)', async () => {
			await page.waitForFunction((m) => new URLSearchParams(location.hash.slice(1)).get('memory') === m,
				second.sent.budgets.memory.slice(0, -1), { timeout: STEP_TIMEOUT });
			const again = await solved(page, () => page.reload());
			await page.waitForSelector('body[data-ready="true"]', { timeout: STEP_TIMEOUT });
			assert.deepEqual(again.sent, second.sent);
			assert.deepEqual(Object.keys(again.sent.space), Object.keys(second.sent.space));
			assert.equal((await shownCount(page)).raw, second.own.feasible);
		}],
		['reduced domains: kept/removed as reduced_space, a removed value explained', async () => {
			const kept = await page.$$eval('#domains .dom-row', (rows) => rows.map((r) => ({
				name: r.querySelector('code').textContent,
				kept: [...r.querySelectorAll('.chip.kept')].map((c) => c.textContent),
				removed: [...r.querySelectorAll('.chip.removed')].map((c) => c.textContent),
			})));
			const batch = kept.find((k) => k.name === 'batch_size');
			assert.deepEqual(batch.kept, second.own.reduced_space.batch_size._value.map(String));
			assert.ok(batch.removed.length > 0, 'no batch size removed at this budget');
			const explained = page.waitForResponse(isPath(/\/explain$/));
			await page.click('#domains .chip.removed');
			assert.equal((await explained).status(), 200);
			await page.waitForSelector('#domains .why:not([hidden]) .path', { timeout: STEP_TIMEOUT });
			const why = await page.textContent('#domains .why:not([hidden])');
			assert.match(why, /\$\.budgets\.memory/);
		}],
		['heat map over batch_size x resolution equals the API\'s', async () => {
			const drawn = page.waitForResponse((r) => isPath(/\/heatmap$/)(r) && r.url().includes('y=resolution'));
			await page.selectOption('#hm-x', 'batch_size');
			await page.selectOption('#hm-y', 'resolution');
			const hm = await (await drawn).json();
			assert.equal(hm.x, 'batch_size');
			assert.equal(hm.y, 'resolution');
			await page.waitForFunction(() => document.querySelector('#heatmap svg')?.getAttribute('aria-label').includes('resolution'));
			const cells = await page.$$eval('#heatmap svg rect.hm-yes, #heatmap svg rect.hm-no', (r) => r.length);
			const yes = await page.$$eval('#heatmap svg rect.hm-yes', (r) => r.length);
			assert.equal(cells, hm.x_values.length * hm.y_values.length);
			const own = (await api('GET', `/v1/reductions/${second.own.id}/heatmap?x=batch_size&y=resolution`)).data;
			assert.equal(yes, own.feasible.flat().filter(Boolean).length);
			assert.ok(yes > 0 && yes < cells, `a heat map with ${yes} of ${cells} feasible cells shows nothing`);
			await page.waitForSelector('#heatmap .legend li >> nth=1');
		}],
		['a picked configuration shows its memory breakdown', async () => {
			const row = page.locator('#configs tbody tr').nth(2);
			const values = await row.locator('td').allTextContents();
			const headers = await page.locator('#configs thead th').allTextContents();
			const checked = page.waitForResponse(isPath(/\/check$/));
			await row.click();
			const r = await checked;
			const q = Object.fromEntries(new URL(r.url()).searchParams);
			assert.deepEqual(q, Object.fromEntries(headers.map((h, i) => [h, values[i]])));
			const result = await r.json();
			assert.equal(result.feasible, true);
			await page.waitForSelector('#breakdown .bar .budget-line', { state: 'attached', timeout: STEP_TIMEOUT });
			assert.equal(await page.textContent('#verdict').then((t) => t.startsWith('Fits every budget')), true);
			const segments = await page.$$eval('#breakdown .bar rect[fill]', (r) => r.length);
			const nonzero = Object.values(result.costs.memory.breakdown).filter((b) => b > 0).length;
			assert.equal(segments, nonzero);
			assert.equal(await page.$$eval('#breakdown .legend.cats li', (l) => l.length), 9);
			assert.equal(await page.getAttribute('#configs tbody tr:nth-child(3)', 'aria-selected'), 'true');
			picked = q;
		}],
		['the link opened by a colleague shows the same view', async () => {
			await page.waitForFunction(() => {
				const q = new URLSearchParams(location.hash.slice(1));
				return q.get('config') && q.get('x') === 'batch_size' && q.get('y') === 'resolution';
			}, null, { timeout: STEP_TIMEOUT });
			const link = page.url();
			const other = await browser.newContext({ viewport: { width: 1200, height: 900 } });
			try {
				const page2 = await other.newPage();
				const checked = page2.waitForResponse(isPath(/\/check$/), { timeout: STEP_TIMEOUT });
				const drawn = page2.waitForResponse(isPath(/\/heatmap$/), { timeout: STEP_TIMEOUT });
				const got = await solved(page2, () => page2.goto(link));
				assert.deepEqual(got.sent, second.sent);
				assert.equal(got.answer.feasible, second.own.feasible);
				assert.deepEqual(Object.fromEntries(new URL((await checked).url()).searchParams), picked);
				const hm = new URL((await drawn).url()).searchParams;
				assert.deepEqual([hm.get('x'), hm.get('y')], ['batch_size', 'resolution']);
				await page2.waitForSelector('#breakdown .bar', { timeout: STEP_TIMEOUT });
				assert.equal(await page2.$eval('#cfg-batch_size', (el) => el.selectedOptions[0].textContent), picked.batch_size);
			} finally {
				await other.close();
			}
		}],
		['the safe estimate: the budget bounds it, fewer fit, the API agrees, the link keeps it', async () => {
			assert.ok(await page.$$eval('#breakdown dt', (l) => l.some((d) => d.textContent === 'safe estimate')),
				'the breakdown names the safe estimate');
			assert.equal(await page.$$eval('#breakdown .safe-line', (l) => l.length), 0, 'marked while not selected');
			const bytes = Number(await page.$eval('#memory-out', (el) => el.dataset.bytes));
			const checked = page.waitForResponse(isPath(/\/check$/), { timeout: STEP_TIMEOUT });
			const safe = await solved(page, () => page.check('#memory-safe'));
			assert.deepEqual(safe.sent.budgets.memory, { limit: `${bytes}B`, estimate: 'safe' });
			assert.equal(safe.answer.budgets.memory.estimate, 'safe');
			const shown = await shownCount(page);
			assert.ok(Number(shown.raw) < Number(second.own.feasible),
				`safe: ${shown.raw} fit, expected estimate: ${second.own.feasible}`);
			const own = await apiAnswer({ ...second.sent, budgets: { memory: { limit: `${bytes}B`, estimate: 'safe' } } });
			assert.equal(shown.raw, own.feasible, `shown ${shown.raw}, the API says ${own.feasible}`);
			const check = await (await checked).json();
			await page.waitForSelector('#breakdown .safe-line', { state: 'attached', timeout: STEP_TIMEOUT });
			const label = await page.getAttribute('#breakdown .bar', 'aria-label');
			assert.ok(label.includes(`safe estimate ${await page.evaluate(async (b) => (await import('/ui/format.js')).bytes(b),
				check.costs.memory.safe_peak_bytes)}`), label);
			await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('memory_safe') === '1',
				null, { timeout: STEP_TIMEOUT });
			const back = await solved(page, () => page.uncheck('#memory-safe'));
			assert.deepEqual(back.sent, second.sent);
			assert.equal((await shownCount(page)).raw, second.own.feasible);
		}],
		['next page of configurations', async () => {
			const before = await page.locator('#configs tbody tr').first().textContent();
			const next = page.waitForResponse(isPath(/\/configurations$/));
			await page.click('#page-next');
			assert.ok(new URL((await next).url()).searchParams.get('cursor'), 'no cursor sent');
			await page.waitForFunction(() => document.getElementById('page-info').textContent === '21–40');
			assert.notEqual(await page.locator('#configs tbody tr').first().textContent(), before);
		}],
		['an API error is shown next to its field', async () => {
			const text = await page.inputValue('#space');
			const response = page.waitForResponse(isReductionPost);
			await paste(page, '#space', text.replace('"width": {"_type": "choice", "_value": [32,', '"width": {"_type": "choice", "_value": [0,'));
			assert.equal((await response).status(), 422);
			await page.waitForSelector('#err-space:not([hidden])', { timeout: STEP_TIMEOUT });
			assert.match(await page.textContent('#err-space'), /\$\.space\.width\._value\[0\]/);
			await noStalePanels(page);
			await solved(page, () => paste(page, '#space', text));
			assert.equal(await page.isHidden('#err-space'), true);
			assert.equal((await shownCount(page)).raw, second.own.feasible);
			// a space that is not JSON clears them too
			await paste(page, '#space', text.slice(0, -3));
			await page.waitForSelector('#err-space:not([hidden])', { timeout: STEP_TIMEOUT });
			await noStalePanels(page);
			await solved(page, () => paste(page, '#space', text));
			assert.equal((await shownCount(page)).raw, second.own.feasible);
		}],
		['warnings shown; a link too long for its space leaves the space out and says so', async () => {
			const text = await page.inputValue('#space');
			// 4000 random 16-letter strings: about 48,000 characters deflated
			// and in base64url, more than the 32,768 a link keeps
			const notes = Array.from({ length: 4000 }, (_, i) => `${i}-${Math.random().toString(36).slice(2, 14)}`);
			const big = { ...JSON.parse(text), note: { _type: 'choice', _value: notes } };
			const got = await solved(page, () => paste(page, '#space', JSON.stringify(big)));
			assert.deepEqual(got.answer.warnings, ['parameter note sets nothing in model resnet (it passes through)']);
			assert.equal(await page.isHidden('#warnings'), false, 'warnings hidden');
			assert.deepEqual(await page.$$eval('#warnings li', (l) => l.map((x) => x.textContent)), got.answer.warnings);
			await page.waitForSelector('#link-note:not([hidden])', { timeout: STEP_TIMEOUT });
			assert.match(await page.textContent('#link-note'), /leaves out the search space: .* more than 32,768/);
			const q = new URLSearchParams(new URL(page.url()).hash.slice(1));
			assert.equal(q.get('space'), null);
			assert.equal(q.get('model'), 'resnet');
			await solved(page, () => paste(page, '#space', text));
			assert.equal(await page.isHidden('#warnings'), true, 'a warning left over');
			await page.waitForSelector('#link-note[hidden]', { state: 'attached', timeout: STEP_TIMEOUT });
			await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('space'), null, { timeout: STEP_TIMEOUT });
		}],
		['the downloaded search_space.json equals the API\'s reduced_space', async () => {
			const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
			assert.equal(download.suggestedFilename(), 'search_space.json');
			const file = path.join(ARTIFACTS, 'search_space.json');
			await download.saveAs(file);
			const saved = JSON.parse(fs.readFileSync(file, 'utf8'));
			assert.deepStrictEqual(saved, second.own.reduced_space);
			// in the user's key order (deepStrictEqual ignores it)
			assert.deepEqual(Object.keys(saved), Object.keys(second.sent.space).filter((k) => k in saved));
			// whatever order the answer has: one served from the cache has the key
			// order of the request that counted it first (CI, 2026-12-06: the
			// test's own API call had counted it, and the file came out in its order)
			assert.deepEqual(await page.evaluate(async () => Object.keys((await import('/ui/space.js')).inOrderOf(
				{ lr: 1, width: 2, batch_size: 3, extra: 4 }, { batch_size: 0, width: 0, gone: 0, lr: 0 }))),
			['batch_size', 'width', 'lr', 'extra']);
			assert.deepEqual(await page.$$eval('#domains .dom-row code', (c) => c.map((x) => x.textContent)),
				Object.keys(second.sent.space));
		}],
		['desktop screenshot', async () => {
			await page.click('#domains .chip.removed');
			await page.waitForSelector('#domains .why:not([hidden]) .path', { timeout: STEP_TIMEOUT });
			await page.evaluate(() => window.scrollTo(0, 0));
			const file = path.join(ARTIFACTS, 'desktop.png');
			await page.screenshot({ path: file, fullPage: true });
			checkPng(file, 1440, 1000);
		}],
		['FLOPs and latency limits: sent, and the bounds of a count still going (202) shown', async () => {
			polls = await slowCounts(page);
			// the page's query with both limits goes out as a count no machine
			// finishes within slowCounts' 0.3 s: the 24-layer transformer (1.3e30
			// configurations) within 40 GiB, in place of the page's ResNet space,
			// which the engine counts in well under a second
			const huge = {
				model: JSON.parse(fs.readFileSync(path.join(TOP_SRCDIR, 'examples/models/transformer24.json'), 'utf8')),
				space: JSON.parse(fs.readFileSync(path.join(TOP_SRCDIR, 'examples/spaces/transformer24.json'), 'utf8')),
				budgets: { memory: '40GiB' }, timeout: 0.3,
			};
			const both = (q) => q && q.budgets && 'flops' in q.budgets && 'latency' in q.budgets;
			let sent = null;
			const toHuge = (route) => {
				const q = route.request().method() === 'POST' ? route.request().postDataJSON() : null;
				if (!both(q))
					return route.fallback();
				sent = q;
				return route.continue({ postData: JSON.stringify({ ...q, ...huge }) });
			};
			await page.route('**/v1/reductions', toHuge);
			const response = page.waitForResponse((r) => isReductionPost(r) &&
				(both(r.request().postDataJSON()) || r.request().postDataJSON().model.name === 'transformer24'));
			await page.check('#compute-on');
			await page.focus('#compute');
			await page.keyboard.press('ArrowRight');
			await page.check('#latency-on');
			const answer = await response;
			assert.ok(sent, 'no query with both limits');
			const budgets = sent.budgets;
			assert.equal(budgets.flops, Number(await page.$eval('#compute-out', (el) => el.dataset.value)));
			assert.match(budgets.latency, /^[0-9.]+ms$/);
			assert.equal(Number(budgets.latency.slice(0, -2)) / 1e3, Number(await page.$eval('#latency-out', (el) => el.dataset.value)));
			await showsBounds(page, answer, polls);
			await page.unroute('**/v1/reductions', toHuge);
		}],
		['a pasted model (custom JSON) and its space', async () => {
			// under the whole memory, without the other limits
			await page.uncheck('#compute-on');
			await page.uncheck('#latency-on');
			await page.focus('#memory');
			await page.keyboard.press('End');
			const model = fs.readFileSync(path.join(TOP_SRCDIR, 'examples/models/transformer24.json'), 'utf8');
			const space = fs.readFileSync(path.join(TOP_SRCDIR, 'examples/spaces/transformer24.json'), 'utf8');
			const response = page.waitForResponse((r) => isReductionPost(r) && typeof r.request().postDataJSON().model === 'object');
			await page.selectOption('#template', '__custom');
			await paste(page, '#model-json', model);
			await paste(page, '#space', space);
			const answer = await response;
			assert.equal(answer.request().postDataJSON().model.name, 'transformer24');
			await showsBounds(page, answer, polls);
			await page.unrouteAll();
		}],
		['a poll answered 503 busy with Retry-After: the page waits, polls again and goes on counting', async () => {
			// the pasted model's count (1.3e30 configurations) is still polled
			const seen = [];
			const busy = (route) => {
				seen.push(Date.now());
				if (seen.length > 1)
					return route.fallback();
				return route.fulfill({
					status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '1' },
					body: JSON.stringify({ type: 'https://dnnsat.dev/problems/busy', title: 'Reduction busy', status: 503,
						detail: 'reduction is being counted by another request', retry_after: 1 }),
				});
			};
			const isPoll = (url) => POLL.test(url.pathname);
			await page.route(isPoll, busy);
			for (const t0 = Date.now(); seen.length < 2; await sleep(50))
				assert.ok(Date.now() - t0 < STEP_TIMEOUT, `polls after the 503: ${seen.length - 1}`);
			await page.unroute(isPoll, busy);
			assert.ok(seen[1] - seen[0] >= 900, `polled again ${seen[1] - seen[0]} ms after Retry-After: 1`);
			assert.match(await page.textContent('#status'), /counting/);
			assert.doesNotMatch(await page.textContent('#feasible-text'), /error/);
		}],
		['an uploaded ONNX model: stored by POST /v1/models, then named by its id in the query', async () => {
			const isUpload = (r) => r.request().method() === 'POST' && new URL(r.url()).pathname === '/v1/models';
			const uploadDone = page.waitForResponse(isUpload, { timeout: STEP_TIMEOUT });
			const solvedById = page.waitForResponse((r) => isReductionPost(r) && (r.request().postDataJSON().model || {}).id,
				{ timeout: STEP_TIMEOUT });
			solvedById.catch(() => {});     // awaited below; an earlier failure must not leave it unhandled
			await page.setInputFiles('#model-file', path.join(TOP_SRCDIR, 'tests/data/onnx/tiny_cnn.onnx'));
			const up = await uploadDone;
			assert.ok([200, 201].includes(up.status()), `POST /v1/models answered ${up.status()}: ${await up.text()}`);
			assert.equal(up.request().headers()['content-type'], 'application/onnx');
			const meta = await up.json();
			assert.match(meta.id, /^[0-9a-f]{64}$/);
			assert.equal(meta.params, 5466);
			const r = await solvedById;
			await page.waitForFunction(() => document.getElementById('summary-card').getAttribute('aria-busy') === 'false',
				null, { timeout: STEP_TIMEOUT });
			const sent = r.request().postDataJSON();
			assert.deepEqual(sent.model, { id: meta.id });
			// the example space from the stored model's one hyperparameter (its batch)
			assert.deepEqual(Object.keys(sent.space), ['batch']);
			const own = await apiAnswer(sent);
			assert.equal((await shownCount(page)).raw, own.feasible);
			assert.match(await page.textContent('#model-upload'), /5,466 parameters/);
		}],
		['a nested space whose options share a key: one row per address, heat map axes by address', async () => {
			await solved(page, async () => {
				await page.selectOption('#template', 'gpt');
				await page.selectOption('#preset', 'gpt2');
			});
			const nest = {
				batch_size: { _type: 'choice', _value: [8, 16] },
				attention: { _type: 'choice', _value: [
					{ _name: 'few_heads', n_head: { _type: 'choice', _value: [4, 8] } },
					{ _name: 'many_heads', n_head: { _type: 'choice', _value: [12, 16, 20] } }] },
			};
			const got = await solved(page, () => paste(page, '#space', JSON.stringify(nest, null, 1)));
			assert.deepEqual(got.sent.space, nest);
			const own = await apiAnswer(got.sent);
			const rows = await page.$$eval('#domains .dom-row', (rs) => rs.map((r) => ({
				name: r.querySelector('code').textContent,
				kept: [...r.querySelectorAll('.chip.kept')].map((c) => c.textContent),
			})));
			assert.deepEqual(rows.map((r) => r.name),
				['batch_size', 'attention', 'attention/few_heads/n_head', 'attention/many_heads/n_head']);
			const option = (name) => (own.reduced_space.attention._value.find((o) => o._name === name) || {}).n_head;
			for (const [row, opt] of [[rows[2], 'few_heads'], [rows[3], 'many_heads']])
				assert.deepEqual(row.kept, option(opt) ? option(opt)._value.map(String) : [], `${row.name}`);
			assert.ok(rows[3].kept.length > 0, 'no value of attention/many_heads/n_head kept');
			const axes = await page.$$eval('#hm-x option', (os) => os.map((o) => o.value));
			assert.ok(axes.includes('attention/few_heads/n_head') && axes.includes('attention/many_heads/n_head'),
				`heat map axes ${axes}`);
			const drawn = page.waitForResponse((r) => isPath(/\/heatmap$/)(r) &&
				new URL(r.url()).searchParams.get('x') === 'attention/many_heads/n_head');
			await page.selectOption('#hm-y', 'batch_size');
			await page.selectOption('#hm-x', 'attention/many_heads/n_head');
			const hm = await (await drawn).json();
			assert.equal(hm.x, 'attention/many_heads/n_head');
			assert.deepEqual(hm.x_values, [12, 16, 20]);
			const apiHm = (await api('GET', `/v1/reductions/${own.id}/heatmap?x=attention/many_heads/n_head&y=batch_size`)).data;
			assert.deepEqual(hm.feasible, apiHm.feasible);
		}],
		['a nested space\'s configuration: editor by address, kept across queries', async () => {
			const selectedText = (id) => page.$eval(`[id="${id}"]`, (el) => el.selectedOptions[0]?.textContent);
			// the first configuration (few_heads) is picked: its nested field is set
			await page.waitForSelector('#breakdown .bar', { timeout: STEP_TIMEOUT });
			assert.equal(await selectedText('cfg-attention'), 'few_heads');
			assert.equal(await selectedText('cfg-attention/few_heads/n_head'), '4');
			assert.equal(await page.$eval('[id="cfg-attention/many_heads/n_head"]', (el) => el.disabled), true);
			// the option chosen in the editor, then its parameter
			let checked = page.waitForResponse(isPath(/\/check$/));
			await page.selectOption('[id="cfg-attention"]', { label: 'many_heads' });
			let q = Object.fromEntries(new URL((await checked).url()).searchParams);
			assert.deepEqual(JSON.parse(q.attention), { _name: 'many_heads', n_head: 12 });
			checked = page.waitForResponse(isPath(/\/check$/));
			await page.selectOption('[id="cfg-attention/many_heads/n_head"]', { label: '16' });
			q = Object.fromEntries(new URL((await checked).url()).searchParams);
			assert.deepEqual(JSON.parse(q.attention), { _name: 'many_heads', n_head: 16 });
			// a new query on the same space keeps that configuration
			checked = page.waitForResponse(isPath(/\/check$/), { timeout: STEP_TIMEOUT });
			await solved(page, () => page.check('#tf32'));
			q = Object.fromEntries(new URL((await checked).url()).searchParams);
			assert.deepEqual(JSON.parse(q.attention), { _name: 'many_heads', n_head: 16 });
			assert.equal(await selectedText('cfg-attention/many_heads/n_head'), '16');
		}],
		['violations in the CLI\'s units, as `dnnsat explain --config` writes them', async () => {
			const units = await page.evaluate(async () => {
				const u = await import('/ui/units.js');
				return [u.humanBytes(1207959552), u.humanBytes(1023), u.humanBytes(1536), u.humanBytes(4501392320),
					u.humanCount(239035482112), u.humanCount(1.5e18), u.humanCount(999.95), u.humanSeconds(0.0203051717535751),
					u.humanSeconds(5e-6), u.humanSeconds(12.5), u.humanBudget('min_utilization', 0.5)];
			});
			// printf's rounding: 1.125 GiB is "1.12" (ties to even), not toFixed's "1.13"
			assert.deepEqual(units, ['1.12 GiB', '1023 B', '1.5 KiB', '4.19 GiB', '239G', '1500P', '1000', '20.31 ms',
				'5 us', '12.5 s', '50%']);
			const checked = page.waitForResponse(isPath(/\/check$/), { timeout: STEP_TIMEOUT });
			const got = await solved(page, async () => {
				await page.fill('#memory-num', '1');
				await page.dispatchEvent('#memory-num', 'change');
			});
			assert.equal(got.sent.budgets.memory, `${2 ** 30}B`);
			const result = await (await checked).json();
			assert.equal(result.feasible, false);
			await page.waitForSelector('#breakdown .violated li', { timeout: STEP_TIMEOUT });
			const shown = await page.$$eval('#breakdown .violated li strong', (l) => l.map((x) => x.textContent));
			assert.match(shown.find((x) => x.startsWith('memory ')) || '(none)', /^memory [0-9.]+ GiB > 1 GiB$/);
			const file = path.join(os.tmpdir(), `dnnsat-dashboard-${process.pid}.json`);
			fs.writeFileSync(file, JSON.stringify({ ...got.sent, timeout: undefined }));
			const config = Object.fromEntries(new URL((await checked).url()).searchParams);
			config.attention = JSON.parse(config.attention);
			config.batch_size = Number(config.batch_size);
			const cli = spawnSync(path.resolve(TOP_BUILDDIR, 'dnnsat'), ['explain', file, '--config', JSON.stringify(config)],
				{ env: { ...process.env, DNNSAT_DATA_DIR: process.env.DNNSAT_DATA_DIR || path.join(TOP_SRCDIR, 'schemas') }, encoding: 'utf8' });
			fs.rmSync(file);
			assert.equal(cli.status, 1, `dnnsat explain: ${cli.stderr}`);
			const fails = cli.stdout.split('\n').filter((l) => l.startsWith('FAIL ')).map((l) => l.slice(5));
			assert.deepEqual(shown, fails);
		}],
		['fine-tuning: LoRA, DoRA and 4-bit base weights sent in the workload; more fit, as the API says; the link keeps them', async () => {
			const plain = await solved(page, async () => {
				await page.selectOption('#template', 'gpt');
				await page.click('#space-example');
				await page.selectOption('#device', 'a100-40gb');
				await page.fill('#memory-num', '16');
				await page.dispatchEvent('#memory-num', 'change');
			});
			assert.equal(plain.sent.model, 'gpt');
			assert.equal(plain.sent.workload.lora, undefined);
			const lora = await solved(page, () => page.fill('#lora-rank', '8'));
			assert.deepEqual(lora.sent.workload.lora, { rank: 8, targets: ['attention.q', 'attention.v'] });
			const q = await solved(page, () => page.selectOption('#quantize', 'nf4'));
			assert.equal(q.sent.workload.quantize, 'nf4');
			assert.deepEqual(q.sent.workload.lora, lora.sent.workload.lora);
			// frozen base weights (no gradients, no Adam state) and 4-bit storage: more configurations fit
			assert.ok(Number(plain.answer.feasible) < Number(lora.answer.feasible) &&
				Number(lora.answer.feasible) < Number(q.answer.feasible),
				`plain ${plain.answer.feasible}, LoRA ${lora.answer.feasible}, LoRA + nf4 ${q.answer.feasible}`);
			const own = await apiAnswer(q.sent);
			assert.equal((await shownCount(page)).raw, own.feasible);
			await page.waitForFunction(() => {
				const f = new URLSearchParams(location.hash.slice(1));
				return f.get('lora_rank') === '8' && f.get('quantize') === 'nf4';
			}, null, { timeout: STEP_TIMEOUT });
			// DoRA on the same targets: use_dora in the workload's lora, kept by the link; it keeps
			// more (the magnitudes, each adapted linear's result and adapter output): no more fit
			const dora = await solved(page, () => page.check('#use-dora'));
			assert.deepEqual(dora.sent.workload.lora, { ...lora.sent.workload.lora, use_dora: true });
			assert.ok(Number(dora.answer.feasible) <= Number(q.answer.feasible),
				`DoRA + nf4 ${dora.answer.feasible}, LoRA + nf4 ${q.answer.feasible}`);
			assert.equal((await shownCount(page)).raw, (await apiAnswer(dora.sent)).feasible);
			await page.waitForFunction(() => new URLSearchParams(location.hash.slice(1)).get('use_dora') === '1', null,
				{ timeout: STEP_TIMEOUT });
			await solved(page, () => page.uncheck('#use-dora'));
			// inference takes no LoRA: the fields are disabled and nothing of them is sent
			const inf = await solved(page, () => page.check('input[name="mode"][value="inference"]'));
			assert.equal(inf.sent.workload.lora, undefined);
			assert.equal(await page.$eval('#lora-rank', (el) => el.disabled), true);
			await solved(page, () => page.check('input[name="mode"][value="training"]'));
			await solved(page, () => page.fill('#lora-rank', ''));
			const back = await solved(page, () => page.selectOption('#quantize', ''));
			assert.deepEqual(back.sent.workload, plain.sent.workload);
		}],
		['nothing fits: the conflict as the API names it; its button moves the memory to where something fits', async () => {
			const none = await solved(page, async () => {
				await page.selectOption('#template', 'mlp');
				await page.selectOption('#preset', 'mnist_mlp');
				await page.click('#space-example');
				await page.selectOption('#device', 't4');
				await page.fill('#memory-num', '0.125');
				await page.dispatchEvent('#memory-num', 'change');
			});
			assert.deepEqual([none.sent.model, none.sent.budgets.memory], [{ template: 'mlp', preset: 'mnist_mlp' }, `${2 ** 27}B`]);
			assert.equal(none.answer.feasible, '0');
			const cf = none.answer.conflict;
			assert.ok(cf && cf.decided, JSON.stringify(cf || none.answer.z3_error));
			const mem = cf.conflict.find((c) => c.path === '$.budgets.memory');
			assert.ok(mem && Number.isInteger(mem.at_least) && mem.at_least > 2 ** 27, JSON.stringify(cf));
			await page.waitForSelector('#conflict li', { timeout: STEP_TIMEOUT });
			const human = await page.evaluate(async (v) => (await import('/ui/units.js')).humanBytes(v), mem.at_least);
			const lines = await page.$$eval('#conflict li > span', (l) => l.map((x) => x.textContent));
			assert.equal(lines.length, cf.conflict.length);
			assert.ok(lines.includes(`memory <= 128 MiB: something fits from ${human}`), JSON.stringify(lines));
			const moved = await solved(page, () => page.click('#conflict button[data-budget="memory"]'));
			assert.equal(moved.sent.budgets.memory, `${mem.at_least}B`);
			assert.notEqual(moved.answer.feasible, '0');
			assert.ok(await page.$eval('#conflict', (el) => el.hidden && el.children.length === 0), 'a stale conflict');
			// one byte less: nothing, as the API's nothing_at says
			assert.equal((await apiAnswer({ ...moved.sent, budgets: { memory: `${mem.nothing_at}B` } })).feasible, '0');
			// the model's own rules: BERT with an embedding size 12 heads do not divide
			// (under the whole memory: with a memory conflict too, the set kept is the
			// budget, which a user can move)
			const bad = await solved(page, async () => {
				await page.focus('#memory');
				await page.keyboard.press('End');
				await page.selectOption('#template', 'bert');
				await paste(page, '#space', '{"hidden": {"_type": "choice", "_value": [100, 130]}}');
			});
			assert.equal(bad.answer.feasible, '0');
			await page.waitForSelector('#conflict ul.rules li', { timeout: STEP_TIMEOUT });
			const rules = await page.$$eval('#conflict ul.rules li', (l) => l.map((x) => x.textContent));
			const want = bad.answer.conflict.conflict[0].rules.find((r) => r.rule === 'heads divides the embedding size');
			assert.ok(want && want.places === 12, JSON.stringify(bad.answer.conflict));
			assert.ok(rules.includes(`no configuration satisfies: heads divides the embedding size (${want.path} and 11 more places)`),
				JSON.stringify(rules));
			// a value only the model's rules remove: its explanation names the rule
			// (before, "the model's shapes are valid (Refty constraints)" alone)
			const mixed = await solved(page, () => paste(page, '#space', '{"hidden": {"_type": "choice", "_value": [96, 100]}}'));
			assert.notEqual(mixed.answer.feasible, '0');
			const why = page.waitForResponse(isPath(/\/explain$/));
			await page.click('#domains .chip.removed');
			assert.equal((await why).status(), 200);
			await page.waitForSelector('#domains .why:not([hidden]) ul.rules li', { timeout: STEP_TIMEOUT });
			const reasons = await page.$$eval('#domains .why:not([hidden]) ul.rules li', (l) => l.map((x) => x.textContent));
			assert.ok(reasons.some((t) => t.startsWith('no configuration satisfies: heads divides the embedding size (')),
				JSON.stringify(reasons));
			// a latency no configuration reaches (the slider's 10 us): the button moves the
			// slider to the first position at or above at_least, where something fits
			const slow = await solved(page, async () => {
				await page.selectOption('#template', 'mlp');
				await page.selectOption('#preset', 'mnist_mlp');
				await page.click('#space-example');
				await page.check('#latency-on');
				await page.focus('#latency');
				await page.keyboard.press('Home');
			});
			assert.equal(slow.answer.feasible, '0');
			const lat = slow.answer.conflict.conflict.find((c) => c.path === '$.budgets.latency');
			assert.ok(lat && typeof lat.at_least === 'number', JSON.stringify(slow.answer.conflict));
			await page.waitForSelector('#conflict button[data-budget="latency"]', { timeout: STEP_TIMEOUT });
			const fast = await solved(page, () => page.click('#conflict button[data-budget="latency"]'));
			const sent = Number(fast.sent.budgets.latency.slice(0, -2)) / 1e3;
			assert.ok(sent >= lat.at_least && sent < lat.at_least * 1.05, `${fast.sent.budgets.latency} for ${lat.at_least} s`);
			assert.notEqual(fast.answer.feasible, '0');
			await page.uncheck('#latency-on');
		}],
		['the AutoML payoff results are linked', async () => {
			assert.equal(await page.getAttribute('#automl-link', 'href'), '/ui/automl/index.html');
			// written by `make bench-automl`; served when it has been run
			if (fs.existsSync(path.join(TOP_SRCDIR, 'web/automl/index.html')))
				assert.equal((await fetch(base + '/ui/automl/index.html')).status, 200);
		}],
		['no script errors', async () => {
			assert.deepEqual(errors, []);
		}],
	]);
	await context.close();
}

async function phone(browser) {
	const context = await browser.newContext({
		viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true,
	});
	const page = await context.newPage();
	await phase('phone', page, [
		['first load at 390x844', async () => {
			const { answer } = await firstLoad(page);
			assert.equal((await shownCount(page)).raw, answer.feasible);
			await page.waitForSelector('#breakdown .bar', { timeout: STEP_TIMEOUT });
			await page.waitForSelector('#heatmap svg', { timeout: STEP_TIMEOUT });
		}],
		['nothing overflows horizontally', async () => {
			const wide = await page.evaluate(() => {
				const w = document.documentElement.clientWidth;
				const out = [...document.querySelectorAll('body *')].filter((el) => {
					const r = el.getBoundingClientRect();
					return r.width > 0 && (r.right > w + 0.5 || r.left < -0.5) && !el.closest('.scroll, .hm-wrap, textarea');
				}).map((el) => `${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}.${el.className}`);
				return { scroll: document.documentElement.scrollWidth, w, out: out.slice(0, 5) };
			});
			assert.equal(wide.scroll, wide.w, `the page is ${wide.scroll} px wide on a ${wide.w} px screen`);
			assert.deepEqual(wide.out, []);
		}],
		['phone screenshot', async () => {
			const file = path.join(ARTIFACTS, 'phone.png');
			await page.screenshot({ path: file, fullPage: true });
			checkPng(file, 780, 1688);
		}],
	]);
	await context.close();
}

async function main() {
	fs.mkdirSync(ARTIFACTS, { recursive: true });
	for (const f of fs.readdirSync(ARTIFACTS).filter((n) => n.startsWith('failure-')))
		fs.rmSync(path.join(ARTIFACTS, f));
	if (!fs.existsSync(CHROMIUM)) {
		console.log(`FAIL: ${CHROMIUM} is missing (apt-get install chromium)`);
		process.exit(1);
	}
	const daemon = await startDaemon();
	base = daemon.url;
	log(`dnnsatd at ${base}`);
	const browser = await chromium.launch({
		executablePath: CHROMIUM,
		// Chromium's sandbox cannot run as root (containers, CI)
		args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
	});
	try {
		await desktop(browser);
		await phone(browser);
	} finally {
		await browser.close();
		daemon.child.removeAllListeners('exit');
		daemon.child.kill('SIGTERM');
	}
	console.log(`time: ${((Date.now() - T0) / 1000).toFixed(1)} s`);
	if (failed)
		console.log(`dnnsatd's log with its access log (the last 80 lines):\n${daemonLog().split('\n').slice(-81).join('\n')}`);
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(failed ? 1 : 0);
}

main().catch((e) => {
	console.log(`FAIL: ${e.stack || e}`);
	process.exit(1);
});
