// space.js - reading NNI search spaces in the browser: the parameters of a
// space (nested choices flattened to addresses "choice/option/param", as
// the server names them), the values of each discrete parameter's grid (to show which
// values a reduction kept), and example spaces for a model's
// hyperparameters; reading and editing a configuration (an NNI sample, in
// which a nested choice's value is its option {_name, param: value, ...})
// by parameter address.

// Grids longer than this are shown as a range, not value by value.
export const MAX_LISTED = 200;

const isOption = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && '_name' in v;

// [{name, spec, steps}] in the space's order; a nested choice's options
// add their own parameters after it, named "choice/option/param" (the
// option's _name: two options may each hold a parameter of one key).
// steps: how a configuration reaches the parameter, [[key, option]...,
// [key]]: the key at each level and the option chosen to go deeper.
export function params(space, prefix = '', via = []) {
	const out = [];
	for (const [key, spec] of Object.entries(space || {})) {
		if (!spec || typeof spec !== 'object' || !('_type' in spec))
			continue;
		const name = prefix + key;
		out.push({ name, spec, steps: [...via, [key]] });
		if (spec._type === 'choice' && Array.isArray(spec._value))
			for (const opt of spec._value.filter(isOption)) {
				const { _name, ...inner } = opt;
				out.push(...params(inner, `${name}/${_name}/`, [...via, [key, _name]]));
			}
	}
	return out;
}

// Python's round(): half to even.
function rint(x) {
	const r = Math.round(x);
	return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const near = (a, b) => Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
const clean = (x) => Number(x.toPrecision(12));

// The grid of clip(round(x / q) * q, lo, hi) over [lo, hi] (quniform and
// qloguniform), as solver/space_parse.c defines it: the clipped ends, and
// the multiples of q strictly inside.
function qgrid(lo, hi, q, limit) {
	if (near(lo, hi))
		return { kind: 'list', values: [lo] };
	let kmin = rint(lo / q), klast = rint(hi / q);
	const head = kmin * q < lo || near(kmin * q, lo);
	const tail = klast * q > hi || near(klast * q, hi);
	if (head)
		kmin += 1;
	if (tail)
		klast -= 1;
	const n = (head ? 1 : 0) + (tail ? 1 : 0) + Math.max(0, klast - kmin + 1);
	if (n > limit)
		return { kind: 'range', lo, hi, count: n };
	const values = head ? [lo] : [];
	for (let k = kmin; k <= klast; k++)
		values.push(clean(k * q));
	if (tail)
		values.push(hi);
	return { kind: 'list', values };
}

// What values a parameter takes: {kind: 'list', values}, {kind: 'range',
// lo, hi, count} for a long grid, or {kind: 'continuous'}.
export function domain(spec, limit = MAX_LISTED) {
	const v = spec && spec._value;
	if (!Array.isArray(v))
		return { kind: 'continuous' };
	switch (spec._type) {
	case 'choice':
		return { kind: 'list', values: v.map((x) => (isOption(x) ? x._name : x)) };
	case 'randint': {
		const [lo, hi] = v;
		if (hi - lo > limit)
			return { kind: 'range', lo, hi: hi - 1, count: hi - lo };
		return { kind: 'list', values: Array.from({ length: Math.max(0, hi - lo) }, (_, i) => lo + i) };
	}
	case 'quniform':
	case 'qloguniform':
		return qgrid(v[0], v[1], v[2], limit);
	default:
		return { kind: 'continuous' };
	}
}

// A key under which equal values of a grid compare equal.
export const valueKey = (v) => (typeof v === 'number' ? `n${clean(v)}` : JSON.stringify(v));

// The parameters that have a listed grid: heat map axes, configuration
// columns, the check editor.
export const discrete = (space) => params(space).filter((p) => domain(p.spec).kind === 'list');

// An example space for a model's hyperparameters ([{name, type, default,
// min, max, values}] or the model file's {name: {...}} object): every
// categorical, batch sizes around the default, a few other sizes around
// theirs; data-shape parameters (classes, vocabulary...) stay fixed.
export function exampleSpace(hyperparameters) {
	const list = Array.isArray(hyperparameters) ? hyperparameters
		: Object.entries(hyperparameters || {}).map(([name, hp]) => ({ name, ...hp }));
	const space = {};
	for (const hp of list) {
		if (Object.keys(space).length >= 6)
			break;
		if (/classes|vocab|features|position/i.test(hp.name))
			continue;
		let values = [];
		if (Array.isArray(hp.values))
			values = hp.values;
		else if (typeof hp.default === 'number') {
			const factors = /batch/i.test(hp.name) ? [0.25, 0.5, 1, 2, 4, 8] : [0.5, 1, 2];
			const round = hp.type === 'int' ? Math.round : clean;
			values = [...new Set(factors.map((f) => round(hp.default * f)))]
				.filter((x) => x >= (hp.min ?? -Infinity) && x <= (hp.max ?? Infinity) && (hp.type !== 'int' || x >= 1));
		}
		if (values.length > 1)
			space[hp.name] = { _type: 'choice', _value: values };
	}
	return space;
}

// JSON on one line, with a space after ':' and ','.
function inline(v) {
	if (Array.isArray(v))
		return `[${v.map(inline).join(', ')}]`;
	if (v !== null && typeof v === 'object')
		return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}: ${inline(x)}`).join(', ')}}`;
	return JSON.stringify(v);
}

// A search space as text people read: one parameter a line.
// space's keys in the order of `like`'s (the user's space as typed), then
// any others: an answer served from the cache has the key order of the
// request that counted it first, which may be another client's.
export function inOrderOf(space, like) {
	const out = {};
	for (const k of Object.keys(like || {}))
		if (Object.hasOwn(space, k))
			out[k] = space[k];
	for (const [k, v] of Object.entries(space))
		if (!Object.hasOwn(out, k))
			out[k] = v;
	return out;
}

export function spaceText(space) {
	const lines = Object.entries(space).map(([k, v]) => `  ${JSON.stringify(k)}: ${inline(v)}`);
	return lines.length ? `{\n${lines.join(',\n')}\n}\n` : '{}\n';
}

// ---- configurations (NNI samples) ----

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

// A nested choice: every option an object with _name (docs/search-space.md).
const isNested = (spec) => spec._type === 'choice' && Array.isArray(spec._value) && spec._value.length > 0 &&
	spec._value.every(isOption);

// The value a parameter takes when nothing else says which (a freshly
// chosen option's parameters): a grid's first value, the middle of a range
// as GET .../configurations gives it (docs/api.md), a nested choice's
// first option with its own parameters' values.
export function defaultValue(spec) {
	const v = Array.isArray(spec._value) ? spec._value : [];
	if (isNested(spec))
		return optionSample(spec._value[0], {});
	const d = domain(spec, 1);
	if (d.kind === 'list' || d.kind === 'range')
		return d.kind === 'list' ? d.values[0] : d.lo;
	const q = v[2];
	const onGrid = (x) => (q > 0 ? clean(Math.round(x / q) * q) : x);
	switch (spec._type) {
	case 'uniform': return clean((v[0] + v[1]) / 2);
	case 'loguniform': return clean(Math.sqrt(v[0] * v[1]));
	case 'normal': case 'qnormal': return onGrid(v[0]);
	case 'lognormal': case 'qlognormal': return onGrid(Math.exp(v[0]));
	default: return null;
	}
}

// The sample of option `opt` ({_name, param: spec...}), keeping the values
// `old` (the option's previous sample) has for its parameters.
function optionSample(opt, old) {
	const out = { _name: opt._name };
	for (const [k, spec] of Object.entries(opt))
		if (k !== '_name' && isObj(spec) && '_type' in spec)
			out[k] = k in old ? old[k] : defaultValue(spec);
	return out;
}

// How a configuration reaches parameter `address` (params()' steps), or
// null when the space has no such parameter.
const walk = (space, address) => (params(space).find((p) => p.name === address) || {}).steps || null;

// The value parameter `address` has in `config`; undefined when the
// configuration does not reach it (an option of its choice not chosen).
// A nested choice's value is its chosen option's _name.
export function configValue(config, space, address) {
	const steps = walk(space, address);
	let at = config;
	for (const [key, via] of steps || []) {
		if (!isObj(at) || !(key in at))
			return undefined;
		const v = at[key];
		if (via === undefined)
			return isObj(v) && typeof v._name === 'string' ? v._name : v;
		if (!isObj(v) || v._name !== via)
			return undefined;
		at = v;
	}
	return undefined;
}

// `config` with parameter `address` set to `value` (for a nested choice,
// an option's _name: that option's sample, its parameters at their
// defaults). Unchanged when the address is not reached.
export function withValue(config, space, address, value) {
	const steps = walk(space, address);
	if (!steps)
		return config;
	const specs = params(space).find((p) => p.name === address);
	const set = (at, i) => {
		const [key, via] = steps[i];
		if (via === undefined) {
			const spec = specs.spec;
			if (!isNested(spec))
				return { ...at, [key]: value };
			const opt = spec._value.find((o) => o._name === value);
			const old = isObj(at[key]) && at[key]._name === value ? at[key] : {};
			return opt ? { ...at, [key]: optionSample(opt, old) } : at;
		}
		if (!isObj(at[key]) || at[key]._name !== via)
			return at;
		return { ...at, [key]: set(at[key], i + 1) };
	};
	return set(config, 0);
}

// Whether `config` is a configuration of `space`: exactly its parameters
// (a nested choice's value one of its options, with exactly that option's
// parameters), each discrete one on its grid, each continuous one a number.
export function fits(config, space) {
	if (!isObj(config) || !isObj(space))
		return false;
	const keys = Object.keys(space).filter((k) => isObj(space[k]) && '_type' in space[k]);
	if (Object.keys(config).length !== keys.length)
		return false;
	return keys.every((k) => {
		const spec = space[k], v = config[k];
		if (!(k in config))
			return false;
		if (isNested(spec)) {
			const opt = isObj(v) && spec._value.find((o) => o._name === v._name);
			if (!opt)
				return false;
			const { _name, ...inner } = opt;
			const { _name: chosen, ...rest } = v;
			return fits(rest, inner);
		}
		const d = domain(spec);
		if (d.kind === 'list')
			return d.values.some((x) => valueKey(x) === valueKey(v));
		if (d.kind === 'range')
			return typeof v === 'number' && v >= d.lo && v <= d.hi;
		return typeof v === 'number';
	});
}
