// breakdown.js - the chosen configuration: an editor (one select per
// discrete parameter) and the answer of GET /v1/reductions/{id}/check drawn
// as a stacked bar of the peak memory by category against the budget line,
// with the violated budgets and the other costs.

import { h, put, s } from './dom.js';
import { configValue, domain, discrete, valueKey, withValue } from './space.js';
import * as fmt from './format.js';
import { partText } from './units.js';

// Drawing order and colors (Okabe-Ito, then greys) of the categories.
const CATEGORIES = [
	['weights', '#0072B2'], ['gradients', '#56B4E9'], ['optimizer', '#009E73'], ['inputs', '#F0E442'],
	['activations', '#E69F00'], ['temporaries', '#D55E00'], ['workspace', '#CC79A7'],
	['allocator', '#B8B8B8'], ['context', '#6E6E6E'],
];

// One select per discrete parameter of `space` (nested ones by address),
// set to `config`'s value; a nested parameter whose option `config` does
// not choose is shown disabled. onChange(newConfig) when the user edits one.
export function renderEditor(el, space, config, onChange) {
	const fields = discrete(space).map((p) => {
		const values = domain(p.spec).values;
		const v = configValue(config, space, p.name);
		const id = `cfg-${p.name}`;
		const options = v === undefined ? [h('option', { value: '', selected: true }, '(option not chosen)')] : [];
		const current = valueKey(v);
		const sel = h('select', { id, 'data-param': p.name, disabled: v === undefined },
			options, values.map((x, i) => h('option', { value: i, selected: v !== undefined && valueKey(x) === current }, fmt.value(x))));
		sel.addEventListener('change', () => onChange(withValue(config, space, p.name, values[Number(sel.value)])));
		return h('div', { class: 'field' }, h('label', { for: id }, p.name), sel);
	});
	const focused = el.contains(document.activeElement) ? document.activeElement.id : null;
	el.replaceChildren(...fields);
	if (focused)
		document.getElementById(focused)?.focus();
}

// The bar at the width it is shown at (`W` px), so its labels keep their size;
// `safe`: the safe estimate's bytes, marked when the budget bounds it.
function bar(W, peak, parts, budget, safe) {
	const H = 74, Y = 22, BH = 30;
	const scale = W / (Math.max(peak, budget || 0, safe || 0) * 1.04 || 1);
	let x = 0;
	const rects = parts.filter(([, , b]) => b > 0).map(([name, color, b]) => {
		const r = s('rect', { x, y: Y, width: Math.max(b * scale, 0.5), height: BH, fill: color },
			s('title', {}, `${name}: ${fmt.bytes(b)}`));
		x += b * scale;
		return r;
	});
	const bx = budget * scale;
	const marks = budget ? [
		s('line', { x1: bx, x2: bx, y1: 8, y2: Y + BH + 8, class: 'budget-line' }),
		s('text', { x: bx, y: 12, 'text-anchor': bx > W * 0.7 ? 'end' : 'start', dx: bx > W * 0.7 ? -4 : 4, class: 'bar-label' },
			`budget ${fmt.bytes(budget)}`),
	] : [];
	if (safe) {
		const sx = safe * scale;
		marks.push(s('line', { x1: sx, x2: sx, y1: Y - 4, y2: Y + BH + 4, class: 'safe-line' },
			s('title', {}, `safe estimate: ${fmt.bytes(safe)}`)));
	}
	const peakX = Math.min(peak * scale, W);
	return s('svg', {
		viewBox: `0 0 ${W} ${H}`, class: 'bar', role: 'img',
		'aria-label': `Peak memory ${fmt.bytes(peak)}${safe ? `, safe estimate ${fmt.bytes(safe)}` : ''}${budget
			? ` against a budget of ${fmt.bytes(budget)}` : ''}`,
	},
	s('rect', { x: 0, y: Y, width: W, height: BH, class: 'bar-bg' }), rects, marks,
	s('text', { x: peakX, y: Y + BH + 18, 'text-anchor': peakX > W * 0.5 ? 'end' : 'start', class: 'bar-label' },
		`peak ${fmt.bytes(peak)}`));
}

// The violated parts, as the CLI's `explain --config` prints them
// ("memory 4.19 GiB > 3 GiB"), each with the path of what it checks.
function violations(list) {
	if (!list.length)
		return null;
	return h('ul', { class: 'violated' }, list.map((v) => h('li', {},
		h('strong', {}, partText(v)),
		v.path ? h('code', {}, ` ${v.path}`) : '')));
}

// Fills `el` with a check answer; `budget`: the memory budget in bytes;
// `safe`: it bounds the safe estimate (then marked on the bar) instead of
// the expected peak.
export function renderBreakdown(el, answer, budget, safe) {
	const c = answer.costs || {};
	const mem = c.memory || {};
	const b = mem.breakdown || {};
	const peak = mem.peak_bytes || 0;
	const parts = CATEGORIES.map(([name, color]) => [name, color, b[name] || 0]);
	const legend = h('ul', { class: 'legend cats' }, parts.map(([name, color, v]) => h('li', {},
		h('span', { class: 'swatch', style: `background:${color}` }), h('span', { class: 'cat' }, name),
		h('span', { class: 'num' }, fmt.bytes(v)), h('span', { class: 'num muted' }, peak ? fmt.percent(v / peak) : ''))));
	const lat = c.latency || {};
	const other = [
		['safe estimate', mem.safe_peak_bytes !== undefined
			? `${fmt.bytes(mem.safe_peak_bytes)}${safe ? ' (the budget bounds it)' : ''}` : null],
		['parameters', c.params !== undefined ? fmt.si(c.params) : null],
		['forward FLOPs', c.flops !== undefined ? fmt.si(c.flops) : null],
		['forward MACs', c.macs !== undefined ? fmt.si(c.macs) : null],
		['inference latency', lat.inference_seconds !== undefined ? fmt.seconds(lat.inference_seconds) : null],
		['training step', lat.training_step_seconds !== undefined ? fmt.seconds(lat.training_step_seconds) : null],
		['GPU utilization', c.utilization !== undefined ? fmt.percent(c.utilization) : null],
	].filter(([, v]) => v !== null);
	put(el,
		h('p', { class: `verdict ${answer.feasible ? 'ok' : 'bad'}`, id: 'verdict' },
			answer.feasible ? 'Fits every budget' : 'Does not fit',
			mem.peak_phase ? h('span', { class: 'muted' }, ` · peak in the ${mem.peak_phase} pass`) : null),
		violations(answer.violated || []),
		h('div', { class: 'bar-wrap' }, bar(Math.min(900, Math.max(280, el.clientWidth || 480)), peak, parts, budget,
			safe ? mem.safe_peak_bytes : 0)),
		legend,
		h('dl', { class: 'costs' }, other.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
}
