// configs.js - a page of feasible configurations as a table whose rows can
// be picked (click, or Enter/Space on a focused row) to show that
// configuration's breakdown.

import { h } from './dom.js';
import { value as valueText } from './format.js';

// Columns: the space's discrete parameters first, in its order, then any
// other key the items have.
function columns(items, order) {
	const seen = new Set(order.filter((k) => items.some((it) => k in it)));
	for (const it of items)
		for (const k of Object.keys(it))
			seen.add(k);
	return [...seen];
}

export function renderConfigs(el, items, order, selectedJson, onPick) {
	if (!items.length) {
		el.replaceChildren(h('p', { class: 'muted' }, 'No configuration fits.'));
		return;
	}
	const cols = columns(items, order);
	const rows = items.map((it) => {
		const json = JSON.stringify(it);
		const tr = h('tr', { tabindex: 0, 'aria-selected': json === selectedJson ? 'true' : 'false' },
			cols.map((c) => h('td', {}, c in it ? valueText(it[c]) : '')));
		const pick = () => {
			for (const other of el.querySelectorAll('tr[aria-selected="true"]'))
				other.setAttribute('aria-selected', 'false');
			tr.setAttribute('aria-selected', 'true');
			onPick(it);
		};
		tr.addEventListener('click', pick);
		tr.addEventListener('keydown', (e) => {
			if (e.key === 'Enter' || e.key === ' ') {
				e.preventDefault();
				pick();
			}
		});
		return tr;
	});
	el.replaceChildren(h('table', { class: 'configs' },
		h('thead', {}, h('tr', {}, cols.map((c) => h('th', { scope: 'col' }, c)))),
		h('tbody', {}, rows)));
}
