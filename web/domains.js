// domains.js - the "reduced domains" view: for every parameter of the
// submitted space, which values the reduction kept and which it removed
// (compared with its reduced_space), and why a removed value was removed
// (GET /v1/reductions/{id}/explain, asked when the user taps the value).

import { h, put } from './dom.js';
import { domain, params, valueKey } from './space.js';
import { value as valueText } from './format.js';
import { rulesItems } from './rules.js';

function rangeText(d) {
	if (d.kind === 'range')
		return `${d.lo} … ${d.hi} (${d.count.toLocaleString('en-US')} values)`;
	return `${d.values.length} values`;
}

// One parameter's line. `reducedSpec` undefined: nothing kept.
function paramRow(p, reducedSpec, explain) {
	const full = domain(p.spec);
	const type = h('span', { class: 'muted' }, p.spec._type);
	if (full.kind === 'continuous')
		return h('div', { class: 'dom-row' },
			h('div', { class: 'dom-head' }, h('code', {}, p.name), type),
			h('p', { class: 'muted' }, `continuous ${JSON.stringify(p.spec._value)}: passed through as it is`));

	const kept = reducedSpec ? domain(reducedSpec) : { kind: 'list', values: [] };
	const why = h('div', { class: 'why', hidden: true });
	if (full.kind === 'range') {
		const keptText = kept.kind === 'range' || kept.values.length ? `kept ${rangeText(kept)}` : 'nothing kept';
		return h('div', { class: 'dom-row' },
			h('div', { class: 'dom-head' }, h('code', {}, p.name), type),
			h('p', {}, `${keptText} of ${rangeText(full)}`));
	}
	const keptKeys = new Set(kept.kind === 'list' ? kept.values.map(valueKey) : []);
	const isKept = (v) => kept.kind === 'range' ? v >= kept.lo && v <= kept.hi : keptKeys.has(valueKey(v));
	const nKept = full.values.filter(isKept).length;
	const chips = full.values.map((v) => {
		if (isKept(v))
			return h('span', { class: 'chip kept', title: `${p.name} = ${valueText(v)}: kept` }, valueText(v));
		const chip = h('button', {
			type: 'button', class: 'chip removed', 'aria-expanded': 'false',
			'aria-label': `${p.name} = ${valueText(v)} removed: why?`,
		}, valueText(v));
		chip.addEventListener('click', () => explain(p.name, v, chip, why));
		return chip;
	});
	return h('div', { class: 'dom-row' },
		h('div', { class: 'dom-head' }, h('code', {}, p.name), type,
			h('span', { class: 'count' }, `${nKept} of ${full.values.length} kept`)),
		h('div', { class: 'chips' }, chips),
		why);
}

// Fills `el`. reduced: the answer's reduced_space (null: nothing fits, or
// not known yet when `running`).
export function renderDomains(el, space, reduced, running, explain) {
	if (running) {
		el.replaceChildren(h('p', { class: 'muted' }, 'The reduced domains appear once the count is exact.'));
		return;
	}
	const kept = new Map(params(reduced || {}).map((p) => [p.name, p.spec]));
	const rows = params(space).map((p) => paramRow(p, kept.get(p.name), explain));
	put(el, reduced ? null : h('p', {}, 'Nothing fits these budgets: every value is removed.'), rows);
}

// Shows the reasons of an explain answer under the parameter's line;
// `onPath(path)` takes the user to the field a reason names.
export function showReasons(why, chip, param, value, answer, onPath) {
	for (const c of why.parentElement.querySelectorAll('.chip.removed[aria-expanded="true"]'))
		c.setAttribute('aria-expanded', 'false');
	chip.setAttribute('aria-expanded', 'true');
	const because = answer.because || [];
	const items = because.map((b) => h('li', {},
		h('span', {}, b.constraint), ' ',
		b.path ? h('button', { type: 'button', class: 'link path', onclick: () => onPath(b.path) }, b.path) : null,
		b.rules ? h('ul', { class: 'rules' }, rulesItems(b)) : null));
	put(why,
		h('p', {}, h('code', {}, `${param} = ${valueText(value)}`),
			answer.kept ? ' is kept.' : because.length ? ' is removed: no configuration with it meets' : ' is removed.'),
		because.length ? h('ul', {}, items) : null);
	why.hidden = false;
}
