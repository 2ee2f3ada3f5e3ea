// rules.js - the model's shape rules that no configuration satisfies on
// its own, as answers list them under the model's validity ("rules",
// "rules_failing", "rules_complete": a conflict's item, or a removed
// value's reason from GET /v1/reductions/{id}/explain), drawn as the CLI
// prints them.

import { h } from './dom.js';

function ruleItem(r) {
	const more = (r.places || 1) - 1;
	return h('li', {}, `no configuration satisfies: ${r.rule} (${r.path}${more > 0 ? ` and ${more} more place${more === 1 ? '' : 's'}` : ''})`);
}

// The list items under a validity item: the rules named, how many more
// fail, and whether every rule was checked.
export function rulesItems(item) {
	if (!item.rules.length)
		return [h('li', {}, item.rules_complete ? 'each shape rule holds somewhere: they conflict only together, or with the other parts'
			: 'no rule found that fails everywhere, before the deadline or among the first 64')];
	const unnamed = (item.rules_failing || 0) - item.rules.length;
	return item.rules.map(ruleItem).concat(
		unnamed > 0 ? [h('li', {}, `and ${unnamed} more rule${unnamed === 1 ? '' : 's'} that no configuration satisfies`)] : [],
		item.rules_complete ? [] : [h('li', {}, 'rules checked: the first 64 distinct ones, before the deadline; others may fail too')]);
}
