// conflict.js - why nothing fits: an exact answer with no feasible
// configuration carries "conflict" (docs/api.md): the parts of the query
// that cannot hold together (without any one of them the others do), and
// for each budget among them the limit from which something fits with
// every other part kept. Drawn under the count as the CLI prints it
// ("memory <= 100 MiB: something fits from 1.33 GiB"; under the model's
// validity, the shape rules no configuration satisfies), with a button for
// each budget the page controls that moves the budget there.

import { h } from './dom.js';
import { humanBudget } from './units.js';
import { rulesItems } from './rules.js';

// The budget a conflict item is about ("memory"), or '' for a constraint
// or the model's validity.
const budgetOf = (item) => (item.kind === 'budget' && (item.path || '').startsWith('$.budgets.') ? item.path.slice(10) : '');

// One item's line: the part as the API states it, and where its budget
// would have to be.
function itemText(item) {
	const budget = budgetOf(item);
	if (typeof item.at_least === 'number')
		return `${item.constraint}: something fits from ${humanBudget(budget, item.at_least)}`;
	if (typeof item.at_most === 'number')
		return `${item.constraint}: something fits up to ${humanBudget(budget, item.at_most)}`;
	if (budget)
		return `${item.constraint}: no value of it alone makes something fit`;
	return item.constraint;
}

// Draws answer's conflict in el (hidden when the answer has none: something
// fits, the count is not exact, or there is no answer). For a budget with a
// limit that makes something fit, asks move.label(budget, value) for a
// button's text (null: the page cannot set it) and calls move.to(budget,
// value) when it is pressed.
export function renderConflict(el, answer, move) {
	const exactNone = answer && answer.status === 'exact' && answer.feasible === '0';
	const cf = exactNone ? answer.conflict : null;
	if (!exactNone) {
		el.replaceChildren();
		el.hidden = true;
		return;
	}
	el.hidden = false;
	if (!cf) {
		el.replaceChildren(h('p', {}, answer.z3_error ? `Nothing fits (why could not be found: ${answer.z3_error}).`
			: 'Nothing fits.'));
		return;
	}
	const items = (cf.conflict || []).map((item) => {
		const budget = budgetOf(item);
		const value = typeof item.at_least === 'number' ? item.at_least : item.at_most;
		const label = budget && typeof value === 'number' ? move.label(budget, value) : null;
		return h('li', { 'data-path': item.path || '' }, h('span', {}, itemText(item)),
			label && h('button', { type: 'button', class: 'move', 'data-budget': budget, onclick: () => move.to(budget, value) },
				label),
			item.rules && h('ul', { class: 'rules' }, rulesItems(item)));
	});
	const head = !cf.decided || items.length === 0 ? `Nothing fits: ${cf.note}`
		: 'Nothing fits: these conflict (without any one of them the others fit together):';
	el.replaceChildren(h('p', {}, head), items.length ? h('ul', {}, items) : null);
}
