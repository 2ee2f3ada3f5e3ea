// app.js - the dashboard's controller: loads the catalogs, turns the inputs
// into a query, sends it (debounced; a newer query aborts the older one and
// everything that hangs on it), polls a reduction that is still counting,
// and hands each answer to the views (summary, domains, heat map, page of
// configurations, breakdown). API errors land next to the field their
// path names. Nothing stale: a query that cannot be sent or that the API
// refuses clears every panel (clearResults), and a new answer redraws them
// all. The inputs live in the URL fragment (state.js): written on every
// change, read at load and when the fragment changes.

import { configQuery, isAbort, pause, request, uploadModel } from './api.js';
import { $, h, put } from './dom.js';
import * as fmt from './format.js';
import { discrete, domain, exampleSpace, fits, inOrderOf, spaceText } from './space.js';
import { decodeState, encodeState, MAX_FRAGMENT } from './state.js';
import { renderDomains, showReasons } from './domains.js';
import { renderHeatmap } from './heatmap.js';
import { renderConfigs } from './configs.js';
import { renderBreakdown, renderEditor } from './breakdown.js';
import { renderConflict } from './conflict.js';

const CUSTOM = '__custom';
const PAGE = 20;
const MEM_STEP = 128 * 2 ** 20; // the memory slider moves by 128 MiB
const LOG_STEPS = 700; // positions of the log-scale sliders
const COMPUTE_DECADES = [6, 16]; // 1 M .. 10 P FLOPs (or MACs)
const LATENCY_DECADES = [-5, 2]; // 10 µs .. 100 s
const LABELS = {
	training: 'Training', inference: 'Inference', sgd: 'SGD', sgd_momentum: 'SGD + momentum', adam: 'Adam',
	adamw: 'AdamW', adagrad: 'Adagrad', rmsprop: 'RMSprop', mixed_fp16: 'mixed fp16 (AMP)', mixed_bf16: 'mixed bf16 (AMP)',
	sdpa: 'SDPA (PyTorch picks)', eager: 'eager (matmul + softmax)', math: 'SDPA math', mem_efficient: 'memory-efficient',
	flash: 'flash', nf4: '4-bit NF4', 'nf4-dq': '4-bit NF4, double quant', fp4: '4-bit FP4', 'fp4-dq': '4-bit FP4, double quant',
	int8: '8-bit LLM.int8()', adamw_torch_fused: 'AdamW, fused (Hugging Face default)',
};
const DEFAULTS = { mode: 'training', optimizer: 'adam', dtype: 'fp32', device: 'a100-40gb', template: 'resnet', attention: 'sdpa' };
// the controls of the training-only parts of a workload
const TRAINING_ONLY = ['optimizer', 'checkpointing', 'lora-rank', 'lora-targets', 'use-dora'];

// Which field an API error's path points at, and the control to focus.
const FIELDS = [
	[/^\$\.budgets\.memory/, 'memory', 'memory'], [/^\$\.budgets\.(flops|macs)/, 'compute', 'compute'],
	[/^\$\.budgets\.latency/, 'latency', 'latency'], [/^\$\.budgets/, 'budgets', 'memory'],
	[/^\$\.(space|fixed|constraints)/, 'space', 'space'], [/^\$\.model/, 'model', 'template'],
	[/^\$\.device/, 'device', 'device'], [/^\$\.workload\.lora\.targets/, 'workload', 'lora-targets'],
	[/^\$\.workload\.lora/, 'workload', 'lora-rank'], [/^\$\.workload\.quantize/, 'workload', 'quantize'],
	[/^\$\.workload\.attention/, 'workload', 'attention'],
	[/^\$\.workload/, 'workload', 'dtype'],
];
const QUERY_SLOTS = ['model', 'space', 'device', 'workload', 'memory', 'compute', 'latency', 'budgets', 'global'];

const st = {
	templates: [], devices: [], examples: {},
	memory: 0,          // the memory budget, bytes
	deviceMemory: 0,    // the memory of the GPU the slider is for
	ctl: null,          // aborts the current query and all its follow-up requests
	views: {},          // name -> AbortController of that view's last request
	sent: '',           // the last query sent, as JSON
	answer: null,       // the latest reduction, and the query it answers
	query: null,
	cursors: [null],    // the cursor of every page up to the one shown
	nextCursor: null,
	selected: null,     // the configuration in the breakdown
	axes: null,         // {x, y}: heat map axes a link asked for
	hash: null,         // the fragment this page last wrote or read
	saving: 0,          // numbers the writes of the fragment (the last one wins)
};

const template = () => st.templates.find((t) => t.name === $('template').value) || null;
const device = () => st.devices.find((d) => d.name === $('device').value);
const fieldOf = (path) => FIELDS.find(([re]) => re.test(path || '')) || [null, 'global', null];

function showError(slot, err) {
	const el = $(`err-${slot}`);
	put(el, h('strong', {}, err.title || 'Error'), ' ', err.detail || err.message || '',
		err.path && !String(err.detail).startsWith(err.path) ? h('code', {}, ` ${err.path}`) : null);
	el.hidden = false;
}

function clearErrors(...slots) {
	for (const slot of slots)
		$(`err-${slot}`).hidden = true;
}

// Takes the user to the control behind an error or explanation path.
function goTo(path) {
	const control = fieldOf(path)[2];
	const id = control === 'template' && !template() ? 'model-json' : control;
	const el = id && $(id);
	if (!el)
		return;
	el.scrollIntoView({ behavior: 'smooth', block: 'center' });
	el.focus({ preventScroll: true });
	el.classList.add('flash');
	setTimeout(() => el.classList.remove('flash'), 1200);
}

// ---- the inputs ----

function option(value, text, selected) {
	return h('option', { value, selected: selected || undefined }, text);
}

function fillTemplates() {
	$('template').replaceChildren(
		h('optgroup', { label: 'Built-in templates' },
			st.templates.map((t) => option(t.name, t.name, t.name === DEFAULTS.template))),
		option(CUSTOM, 'Custom model (paste JSON)'));
}

function onTemplate() {
	const t = template();
	$('model-field').hidden = !!t;
	$('preset-field').hidden = !t || !t.presets.length;
	$('template-desc').textContent = t ? t.description
		: 'Paste a model in dnnsat\'s JSON format, then "Example" builds a space from its hyperparameters.';
	$('preset').replaceChildren(option('', 'template defaults'),
		...(t ? t.presets.map((p) => option(p.name, p.name)) : []));
	setExample();
}

// The hyperparameters of the models uploaded from this page, by id (a
// query names them by id, so the textarea does not hold them).
const uploaded = new Map();

function setExample() {
	const t = template();
	let space = {};
	if (t)
		space = st.examples[t.name] || exampleSpace(t.hyperparameters);
	else {
		try {
			const m = JSON.parse($('model-json').value);
			space = exampleSpace(m.hyperparameters || uploaded.get(m.id));
		} catch {
			space = {};
		}
	}
	$('space').value = spaceText(space);
	clearErrors('space');
}

// A model file chosen in the custom model's field: stored by POST
// /v1/models, then the query names it as {"id": ...} and the space is
// built from its hyperparameters (GET /v1/models/{id} returns them).
async function onModelFile() {
	const file = $('model-file').files[0];
	if (!file)
		return;
	clearErrors('model');
	$('model-upload').textContent = `Uploading ${file.name}...`;
	try {
		const { status, data } = await uploadModel(file);
		const { data: stored } = await request(`/v1/models/${data.id}`);
		uploaded.set(data.id, stored.model.hyperparameters);
		$('model-json').value = JSON.stringify({ id: data.id });
		setExample();
		$('model-upload').textContent = `${data.name || file.name}: ${fmt.count(String(data.params))} parameters, `
			+ `${status === 201 ? 'stored' : 'already stored'} as ${data.id.slice(0, 12)}...`;
		$('model-upload').dataset.id = data.id;
		solveSoon();
	} catch (e) {
		$('model-upload').textContent = '';
		showError('model', e);
	}
}

// The memory a process can allocate on the device: the solver caps every
// memory budget to it, so the slider ends there.
const usable = (d) => d.usable_memory_bytes || d.memory_bytes;

function fillDevices() {
	$('device').replaceChildren(...st.devices.map((d) =>
		option(d.name, `${d.display_name || d.name} · ${fmt.bytes(usable(d))} usable`, d.name === DEFAULTS.device)));
}

function onDevice() {
	const d = device();
	const slider = $('memory');
	const wasFull = !st.deviceMemory || st.memory >= st.deviceMemory;
	st.deviceMemory = usable(d);
	slider.max = Math.ceil(usable(d) / MEM_STEP);
	$('memory-num').max = usable(d) / 2 ** 30;
	setMemory(wasFull ? usable(d) : Math.min(st.memory, usable(d)));
	const fp32 = d.peak_flops && d.peak_flops.fp32;
	$('device-desc').textContent = [d.memory_type, d.memory_bandwidth_bytes_per_s && `${fmt.si(d.memory_bandwidth_bytes_per_s, 'B/s')}`,
		fp32 && `fp32 ${fmt.si(fp32, 'FLOP/s')}`].filter(Boolean).join(' · ');
}

function fillWorkload(schema) {
	const props = schema.$defs.workload.properties;
	const name = (v) => LABELS[v] || v;
	$('mode').append(...props.mode.enum.map((m) => h('label', {},
		h('input', { type: 'radio', name: 'mode', value: m, checked: m === DEFAULTS.mode }), name(m))));
	// dnnsat's names, and Hugging Face's default (AdamW with fused=True)
	const optimizers = [...props.optimizer.anyOf[0].enum, 'adamw_torch_fused'];
	$('optimizer').replaceChildren(...optimizers.map((o) => option(o, name(o), o === DEFAULTS.optimizer)));
	$('dtype').replaceChildren(...props.dtype.enum.map((d) => option(d, name(d), d === DEFAULTS.dtype)));
	$('attention').replaceChildren(...props.attention.enum.map((a) => option(a, name(a), a === DEFAULTS.attention)));
	$('quantize').replaceChildren(option('', 'as the precision', true), ...props.quantize.enum.map((q) => option(q, name(q), false)));
}

function onMode() {
	for (const id of TRAINING_ONLY)
		$(id).disabled = mode() !== 'training';
}

// The workload's fine-tuning and technique fields the controls set (none
// at their defaults, so that a plain query is unchanged).
function techniques(workload) {
	if ($('attention').value !== DEFAULTS.attention)
		workload.attention = $('attention').value;
	if ($('quantize').value)
		workload.quantize = $('quantize').value;
	if (workload.mode !== 'training')
		return;
	if ($('checkpointing').checked)
		workload.checkpointing = true;
	const rank = $('lora-rank').value.trim();
	if (rank)
		workload.lora = {
			rank: /^[0-9]+$/.test(rank) ? Number(rank) : rank,
			targets: $('lora-targets').value.split(',').map((t) => t.trim()).filter(Boolean),
			...($('use-dora').checked ? { use_dora: true } : {}),
		};
}

const mode = () => document.querySelector('input[name="mode"]:checked').value;

function setMemory(bytes) {
	const d = device();
	st.memory = Math.max(1, Math.round(bytes));
	$('memory').value = Math.round(st.memory / MEM_STEP);
	$('memory-num').value = Number((st.memory / 2 ** 30).toFixed(3));
	const out = $('memory-out');
	out.textContent = `${fmt.bytes(st.memory)} · ${fmt.percent(st.memory / usable(d))}`;
	out.dataset.bytes = st.memory;
}

const computeValue = () => fmt.logValue(Number($('compute').value), ...COMPUTE_DECADES, LOG_STEPS);
const latencyValue = () => fmt.logValue(Number($('latency').value), ...LATENCY_DECADES, LOG_STEPS);

function showBudgets() {
	const kind = $('compute-kind').value === 'macs' ? 'MACs' : 'FLOPs';
	$('compute').disabled = !$('compute-on').checked;
	$('latency').disabled = !$('latency-on').checked;
	$('compute-out').textContent = $('compute-on').checked ? `≤ ${fmt.si(computeValue())} ${kind}` : 'no limit';
	$('compute-out').dataset.value = computeValue();
	$('latency-out').textContent = $('latency-on').checked ? `≤ ${fmt.seconds(latencyValue())}` : 'no limit';
	$('latency-out').dataset.value = latencyValue();
}

// The smallest position of a log slider over `decades` whose value is at
// least v, or -1 when the slider ends below it.
function logPosAtLeast(v, decades) {
	for (let pos = Math.max(0, fmt.logPos(v, ...decades, LOG_STEPS) - 1); pos <= LOG_STEPS; pos++)
		if (fmt.logValue(pos, ...decades, LOG_STEPS) >= v)
			return pos;
	return -1;
}

// Moves a budget of the page to where the answer's conflict says
// something fits (conflict.js): label() names the move, or null when the
// page cannot make it (a budget it has no control for, a memory beyond the
// GPU's, a value past a slider's end); to() makes it and solves.
const MOVE = {
	label(budget, v) {
		if (budget === 'memory')
			return v <= usable(device()) ? `Set memory to ${fmt.bytes(Math.ceil(v))}` : null;
		if ((budget === 'flops' || budget === 'macs') && $('compute-kind').value === budget) {
			const pos = logPosAtLeast(v, COMPUTE_DECADES);
			return pos < 0 ? null
				: `Set ${budget === 'macs' ? 'MACs' : 'FLOPs'} to ≤ ${fmt.si(fmt.logValue(pos, ...COMPUTE_DECADES, LOG_STEPS))}`;
		}
		if (budget === 'latency') {
			const pos = logPosAtLeast(v, LATENCY_DECADES);
			return pos < 0 ? null : `Set latency to ≤ ${fmt.seconds(fmt.logValue(pos, ...LATENCY_DECADES, LOG_STEPS))}`;
		}
		return null;
	},
	to(budget, v) {
		if (budget === 'memory')
			setMemory(Math.ceil(v));
		else
			$(budget === 'latency' ? 'latency' : 'compute').value =
				logPosAtLeast(v, budget === 'latency' ? LATENCY_DECADES : COMPUTE_DECADES);
		showBudgets();
		solve();
	},
};

// A JSON textarea's object; undefined (and the error shown) when invalid.
function readJson(id, slot) {
	if (!$(id).value.trim()) {
		showError(slot, { title: 'Empty', detail: 'paste a JSON object here' });
		return undefined;
	}
	try {
		const v = JSON.parse($(id).value);
		if (v === null || typeof v !== 'object' || Array.isArray(v))
			throw new Error('expected a JSON object { ... }');
		return v;
	} catch (e) {
		showError(slot, { title: 'Invalid JSON', detail: e.message });
		return undefined;
	}
}

// The query the inputs describe, or null (errors shown) when they are not
// valid JSON yet.
function buildQuery() {
	clearErrors('model', 'space');
	const t = template();
	const model = t ? ($('preset').value ? { template: t.name, preset: $('preset').value } : t.name)
		: readJson('model-json', 'model');
	const space = readJson('space', 'space');
	if (model === undefined || space === undefined)
		return null;
	const workload = { mode: mode(), dtype: $('dtype').value, tf32: $('tf32').checked };
	if (workload.mode === 'training')
		workload.optimizer = $('optimizer').value;
	techniques(workload);
	const limit = `${st.memory}B`;                      // sizes need a unit
	// the safe estimate: the budget bounds costs.memory.safe_peak_bytes
	const budgets = { memory: $('memory-safe').checked ? { limit, estimate: 'safe' } : limit };
	if ($('compute-on').checked)
		budgets[$('compute-kind').value] = computeValue();
	if ($('latency-on').checked)
		budgets.latency = `${fmt.sig(latencyValue() * 1e3)}ms`;
	return { model, space, device: $('device').value, workload, budgets };
}

// ---- the answer ----

function ratioOf(part, total) {
	const t = Number(total);
	return t > 0 ? Number(part) / t : 0;
}

function renderSummary(a) {
	const exact = a.status === 'exact';
	const count = $('feasible-count');
	count.textContent = exact ? fmt.count(a.feasible) : `${fmt.count(a.feasible_lower)} – ${fmt.count(a.feasible_upper)}`;
	count.dataset.feasible = exact ? a.feasible : '';
	count.title = exact ? a.feasible : `${a.feasible_lower} to ${a.feasible_upper}`;
	$('feasible-text').textContent = exact
		? `of ${fmt.count(a.total)} configurations fit (${fmt.percent(a.ratio)})`
		: `of ${fmt.count(a.total)} configurations fit (between ${fmt.percent(ratioOf(a.feasible_lower, a.total))} and ${fmt.percent(ratioOf(a.feasible_upper, a.total))})`;
	$('meter-lo').style.width = `${100 * ratioOf(exact ? a.feasible : a.feasible_lower, a.total)}%`;
	$('meter-hi').style.width = `${100 * (exact ? 0 : ratioOf(a.feasible_upper, a.total) - ratioOf(a.feasible_lower, a.total))}%`;
	$('status').textContent = !exact ? 'still counting: the bounds tighten every few seconds'
		: a.cached ? 'exact · from the cache' : `exact · solved in ${fmt.seconds(a.seconds)}`;
	$('pill').textContent = `${count.textContent} / ${fmt.count(a.total)} fit`;
	const warnings = a.warnings || [];
	$('warnings').replaceChildren(...warnings.map((w) => h('li', {}, w)));
	$('warnings').hidden = warnings.length === 0;
	$('download').disabled = !(exact && a.reduced_space);
	renderConflict($('conflict'), a, MOVE);
}

function busy(on) {
	$('summary-card').classList.toggle('busy', on);
	$('summary-card').setAttribute('aria-busy', on ? 'true' : 'false');
}

// Runs a view's request, aborting its previous one; a newer query aborts it
// too. Errors go to the view's slot.
async function view(name, slot, load) {
	st.views[name]?.abort();
	const ctl = st.views[name] = new AbortController();
	const signal = st.ctl ? AbortSignal.any([ctl.signal, st.ctl.signal]) : ctl.signal;
	clearErrors(slot);
	try {
		await load(signal, st.answer.id);
	} catch (e) {
		if (!isAbort(e)) {
			$(PANES[slot]).replaceChildren();
			showError(slot, e);
		}
	}
}

// The element each view draws in.
const PANES = { heatmap: 'heatmap', configs: 'configs', check: 'breakdown' };

// Empties every panel that shows an answer, for a query that has none (not
// valid JSON, or refused by the API): `why` goes under the count.
function clearResults(why) {
	st.ctl?.abort();
	st.ctl = null;
	for (const v of Object.values(st.views))
		v.abort();
	st.views = {};
	st.sent = '';
	st.answer = null;
	st.query = null;
	const count = $('feasible-count');
	count.textContent = '–';
	count.dataset.feasible = '';
	count.title = '';
	$('feasible-text').textContent = why;
	$('meter-lo').style.width = '0%';
	$('meter-hi').style.width = '0%';
	$('status').textContent = '';
	$('pill').textContent = '…';
	$('warnings').replaceChildren();
	$('warnings').hidden = true;
	renderConflict($('conflict'), null, MOVE);
	$('download').disabled = true;
	$('domains').replaceChildren(h('p', { class: 'muted' }, 'No answer for these inputs.'));
	$('hm-x').replaceChildren();
	$('hm-y').replaceChildren();
	$('heatmap').replaceChildren();
	$('configs').replaceChildren();
	$('page-info').textContent = '';
	$('page-first').disabled = $('page-prev').disabled = $('page-next').disabled = true;
	$('editor').replaceChildren();
	$('breakdown').replaceChildren();
	clearErrors('heatmap', 'configs', 'check');
	busy(false);
}

function fillAxes(space) {
	const all = discrete(space);
	const names = all.map((p) => p.name);
	// by default two numeric parameters with a handful of values each
	const handy = all.filter((p) => {
		const v = domain(p.spec).values;
		return v.length >= 3 && v.length <= 12 && v.every((x) => typeof x === 'number');
	}).map((p) => p.name).concat(names);
	const keep = (id, other) => {
		const wanted = st.axes && st.axes[id === 'hm-x' ? 'x' : 'y'];
		const v = names.includes(wanted) ? wanted : $(id).value;
		return names.includes(v) && v !== other ? v : handy.find((n) => n !== other);
	};
	const x = keep('hm-x', undefined), y = keep('hm-y', x);
	st.axes = null;
	$('hm-x').replaceChildren(...names.map((n) => option(n, n, n === x)));
	$('hm-y').replaceChildren(...names.map((n) => option(n, n, n === y)));
}

function loadHeatmap() {
	const x = $('hm-x').value, y = $('hm-y').value;
	if (!x || !y || x === y) {
		$('heatmap').replaceChildren(h('p', { class: 'muted' }, 'Pick two different discrete parameters.'));
		return Promise.resolve();
	}
	if (st.answer && st.answer.status !== 'exact') {
		// the heat map needs the exact count: asked for while the count
		// goes on, it would hold the reduction (and a solver worker) until
		// its deadline; the exact answer's refresh draws it
		st.views.heatmap?.abort();
		clearErrors('heatmap');
		$('heatmap').replaceChildren(h('p', { class: 'muted' }, 'The heat map is drawn once the count is exact.'));
		return Promise.resolve();
	}
	return view('heatmap', 'heatmap', async (signal, id) => {
		const q = new URLSearchParams({ x, y });
		const { data } = await request(`/v1/reductions/${id}/heatmap?${q}`, { signal });
		renderHeatmap($('heatmap'), data);
	});
}

function loadCheck() {
	renderEditor($('editor'), st.query.space, st.selected, pick);
	return view('check', 'check', async (signal, id) => {
		const { data } = await request(`/v1/reductions/${id}/check?${configQuery(st.selected)}`, { signal });
		const m = st.query.budgets.memory;
		renderBreakdown($('breakdown'), data, parseFloat(typeof m === 'object' ? m.limit : m), typeof m === 'object');
	});
}

function pick(config) {
	st.selected = config;
	saveState();
	return loadCheck();
}

function loadPage(cursor) {
	return view('page', 'configs', async (signal, id) => {
		const q = new URLSearchParams({ limit: PAGE });
		if (cursor)
			q.set('cursor', cursor);
		const { data } = await request(`/v1/reductions/${id}/configurations?${q}`, { signal });
		st.nextCursor = data.next_cursor;
		const first = !st.selected && data.items.length > 0;
		if (first)
			st.selected = data.items[0];
		const order = discrete(st.query.space).map((p) => p.name);
		renderConfigs($('configs'), data.items, order, JSON.stringify(st.selected), pick);
		const start = (st.cursors.length - 1) * PAGE;
		$('page-info').textContent = data.items.length ? `${start + 1}–${start + data.items.length}` : '';
		$('page-prev').disabled = $('page-first').disabled = st.cursors.length < 2;
		$('page-next').disabled = !st.nextCursor;
		if (first)
			await loadCheck();
	});
}

async function explain(param, value, chip, why) {
	if (chip.getAttribute('aria-expanded') === 'true') {
		chip.setAttribute('aria-expanded', 'false');
		why.hidden = true;
		return;
	}
	try {
		const q = new URLSearchParams({ param, value: fmt.value(value) });
		const { data } = await request(`/v1/reductions/${st.answer.id}/explain?${q}`, { signal: st.ctl.signal });
		showReasons(why, chip, param, value, data, goTo);
	} catch (e) {
		if (!isAbort(e)) {
			why.replaceChildren(h('p', { class: 'error' }, `${e.title || 'Error'}: ${e.detail || e.message}`));
			why.hidden = false;
		}
	}
}

// Shows an answer; `refresh`: also reload the views that depend on it.
async function show(answer, query, refresh) {
	st.answer = answer;
	st.query = query;
	renderSummary(answer);
	if (!refresh)
		return;
	renderDomains($('domains'), query.space, answer.reduced_space, answer.status !== 'exact', explain);
	fillAxes(query.space);
	st.cursors = [null];
	if (!fits(st.selected, query.space)) {
		st.selected = null;
		$('editor').replaceChildren();
		$('breakdown').replaceChildren(h('p', { class: 'muted' }, 'Pick a feasible configuration.'));
	}
	await Promise.all([loadHeatmap(), loadPage(null), st.selected ? loadCheck() : null]);
}

async function solve() {
	saveState();
	const query = buildQuery();
	if (!query) {
		clearResults('The inputs have an error: see the message next to the field.');
		return;
	}
	const key = JSON.stringify(query);
	if (key === st.sent)
		return;
	st.sent = key;
	st.ctl?.abort();
	const ctl = st.ctl = new AbortController();
	clearErrors(...QUERY_SLOTS);
	busy(true);
	try {
		let { status, data } = await request('/v1/reductions', { method: 'POST', body: { ...query, timeout: 5 }, signal: ctl.signal });
		// the views load while the count goes on
		const views = [show(data, query, true)];
		while (status === 202) {
			let next;
			try {
				next = await request(`/v1/reductions/${data.id}?timeout=2`, { signal: ctl.signal });
			} catch (e) {
				// a 503 with Retry-After: another request holds the count
				// past this poll's deadline, or the poll waited that long
				// for a worker; the count goes on, so ask again
				if (isAbort(e) || e.status !== 503 || !e.retryAfter)
					throw e;
				await pause(e.retryAfter * 1000, ctl.signal);
				continue;
			}
			({ status, data } = next);
			views.push(show(data, query, data.status === 'exact'));
		}
		await Promise.all(views);
	} catch (e) {
		if (isAbort(e))
			return;
		clearResults('The query has an error: see the message next to the field.');
		showError(fieldOf(e.path)[1], e);
	} finally {
		if (st.ctl === ctl)
			busy(false);
	}
}

// ---- the inputs in the URL ----

// The inputs as the fragment keeps them (state.js).
function inputs() {
	const t = $('template').value;
	return {
		model: t, preset: $('preset').value, model_json: t === CUSTOM ? $('model-json').value : '',
		space: $('space').value, device: $('device').value, mode: mode(), optimizer: $('optimizer').value,
		dtype: $('dtype').value, tf32: $('tf32').checked ? '1' : '', attention: $('attention').value,
		quantize: $('quantize').value, checkpointing: $('checkpointing').checked ? '1' : '',
		lora_rank: $('lora-rank').value, lora_targets: $('lora-targets').value,
		use_dora: $('use-dora').checked ? '1' : '', memory: st.memory,
		memory_safe: $('memory-safe').checked ? '1' : '',
		compute: $('compute-on').checked ? `${$('compute-kind').value}:${$('compute').value}` : '',
		latency: $('latency-on').checked ? $('latency').value : '',
		x: $('hm-x').value, y: $('hm-y').value, config: st.selected ? JSON.stringify(st.selected) : '',
	};
}

// Writes the inputs into the fragment (replacing the history entry: a
// change is not a page to go back to); says when the texts were too long
// to go with them.
async function saveState() {
	const n = ++st.saving;
	const note = $('link-note');
	let made;
	try {
		made = await encodeState(inputs());
	} catch (e) {
		note.textContent = `The link cannot keep these inputs in this browser: ${e.message}.`;
		note.hidden = false;
		return;
	}
	if (n !== st.saving)
		return;
	st.hash = made.fragment;
	history.replaceState(null, '', `${location.pathname}${location.search}#${made.fragment}`);
	note.hidden = made.dropped.length === 0;
	note.textContent = made.dropped.length === 0 ? '' : `This page's link leaves out the ${made.dropped
		.map((k) => (k === 'space' ? 'search space' : 'model JSON')).join(' and ')}: with them it would be ${made.length
		.toLocaleString('en-US')} characters, more than ${MAX_FRAGMENT.toLocaleString('en-US')}. Share search_space.json instead.`;
}

// Sets the inputs from the fragment, if any; what cannot be used is named
// in the page's error line and left as it was.
async function restore() {
	const fragment = location.hash.replace(/^#/, '');
	st.hash = fragment;
	if (!fragment)
		return;
	const { state: s, errors } = await decodeState(fragment);
	const bad = [...errors];
	const choose = (id, v) => {
		if (v === undefined)
			return;
		if ([...$(id).options].some((o) => o.value === v))
			$(id).value = v;
		else
			bad.push(`${id}: no ${JSON.stringify(v)} here`);
	};
	choose('template', s.model);
	onTemplate();
	choose('preset', s.preset);
	if (s.model_json !== undefined)
		$('model-json').value = s.model_json;
	if (s.space !== undefined)
		$('space').value = s.space;
	else if (s.model_json !== undefined)
		setExample();
	choose('device', s.device);
	st.deviceMemory = 0;
	onDevice();
	const radio = document.querySelector(`input[name="mode"][value="${CSS.escape(s.mode || DEFAULTS.mode)}"]`);
	if (radio)
		radio.checked = true;
	else
		bad.push(`mode: no ${JSON.stringify(s.mode)} here`);
	choose('optimizer', s.optimizer);
	choose('dtype', s.dtype);
	choose('attention', s.attention);
	choose('quantize', s.quantize || '');
	onMode();
	$('tf32').checked = s.tf32 === '1';
	$('checkpointing').checked = s.checkpointing === '1';
	$('lora-rank').value = s.lora_rank || '';
	$('use-dora').checked = s.use_dora === '1';
	if (s.lora_targets !== undefined)
		$('lora-targets').value = s.lora_targets;
	$('memory-safe').checked = s.memory_safe === '1';
	if (s.memory !== undefined) {
		const bytes = Number(s.memory);
		if (bytes > 0)
			setMemory(Math.min(bytes, usable(device())));
		else
			bad.push(`memory: ${JSON.stringify(s.memory)} is not a number of bytes`);
	}
	const slider = (id, text, kinds) => {
		const [kind, pos] = kinds ? (text || '').split(':') : [null, text];
		$(`${id}-on`).checked = !!text && Number(pos) >= 0;
		if (!text)
			return;
		if (!(Number(pos) >= 0) || (kinds && !kinds.includes(kind)))
			bad.push(`${id}: ${JSON.stringify(text)} is not a position of the slider`);
		else {
			$(id).value = pos;
			if (kinds)
				$(`${id}-kind`).value = kind;
		}
	};
	slider('compute', s.compute, ['flops', 'macs']);
	slider('latency', s.latency, null);
	showBudgets();
	st.axes = { x: s.x, y: s.y };
	st.selected = null;
	if (s.config) {
		try {
			st.selected = JSON.parse(s.config);
		} catch (e) {
			bad.push(`config: ${e.message}`);
		}
	}
	if (bad.length)
		showError('link', { title: 'Part of the link could not be used:', detail: bad.join('; ') });
}

// One timer for every input, so that a quick change does not send a query
// whose typed part is half done.
let solveTimer = 0;
function solveIn(ms) {
	clearTimeout(solveTimer);
	solveTimer = setTimeout(solve, ms);
}
const solveSoon = () => solveIn(250);
const solveAfterTyping = () => solveIn(700);

function download() {
	const text = spaceText(inOrderOf(st.answer.reduced_space, st.query.space));
	const url = URL.createObjectURL(new Blob([text], { type: 'application/json' }));
	const a = h('a', { href: url, download: 'search_space.json', hidden: true });
	document.body.append(a);
	a.click();
	a.remove();
	setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function wire() {
	const on = (id, ev, fn) => $(id).addEventListener(ev, fn);
	on('template', 'change', () => { onTemplate(); solveSoon(); });
	on('preset', 'change', solveSoon);
	on('model-json', 'input', solveAfterTyping);
	on('model-file', 'change', onModelFile);
	on('space', 'input', solveAfterTyping);
	on('space-example', 'click', () => { setExample(); solveSoon(); });
	on('device', 'change', () => { onDevice(); solveSoon(); });
	on('mode', 'change', () => { onMode(); solveSoon(); });
	for (const id of ['lora-rank', 'lora-targets'])
		on(id, 'input', solveAfterTyping);
	for (const id of ['optimizer', 'dtype', 'tf32', 'attention', 'quantize', 'checkpointing', 'use-dora', 'memory-safe', 'compute-on',
		'compute-kind', 'latency-on'])
		on(id, 'change', () => { showBudgets(); solveSoon(); });
	on('memory', 'input', () => { setMemory(Math.min(Number($('memory').value) * MEM_STEP, usable(device()))); solveSoon(); });
	on('memory-num', 'change', () => {
		const gib = Number($('memory-num').value);
		if (gib > 0)
			setMemory(Math.min(gib * 2 ** 30, usable(device())));
		solveSoon();
	});
	for (const id of ['compute', 'latency'])
		on(id, 'input', () => { showBudgets(); solveSoon(); });
	on('hm-x', 'change', () => { saveState(); loadHeatmap(); });
	on('hm-y', 'change', () => { saveState(); loadHeatmap(); });
	window.addEventListener('hashchange', () => {
		if (location.hash.replace(/^#/, '') === st.hash)
			return;
		clearErrors('link');
		st.sent = '';
		restore().then(solveSoon);
	});
	on('page-next', 'click', () => { st.cursors.push(st.nextCursor); loadPage(st.nextCursor); });
	on('page-prev', 'click', () => { st.cursors.pop(); loadPage(st.cursors[st.cursors.length - 1]); });
	on('page-first', 'click', () => { st.cursors = [null]; loadPage(null); });
	on('download', 'click', download);
}

async function init() {
	wire();
	$('compute').value = fmt.logPos(1e12, ...COMPUTE_DECADES, LOG_STEPS);
	$('latency').value = fmt.logPos(0.01, ...LATENCY_DECADES, LOG_STEPS);
	try {
		const [templates, devices, schema, examples] = await Promise.all([
			request('/v1/templates'), request('/v1/devices'), request('/schemas/api/query.schema.json'),
			request('/ui/example-spaces.json')]);
		st.templates = templates.data.templates;
		st.devices = devices.data.devices;
		st.examples = examples.data;
		fillWorkload(schema.data);
	} catch (e) {
		showError('global', e);
		$('feasible-text').textContent = 'The catalog could not be loaded.';
		return;
	}
	fillTemplates();
	fillDevices();
	onTemplate();
	onDevice();
	showBudgets();
	await restore();
	await solve();
	document.body.dataset.ready = 'true';
}

init();
