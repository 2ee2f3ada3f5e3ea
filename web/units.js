// units.js - numbers in human units exactly as the CLI writes them
// (cli/cli_units.c), so that the dashboard and `dnnsat explain` say the same
// thing: bytes in binary units ("4.19 GiB": one decimal for KiB and MiB,
// two from GiB on, whole bytes below 1 KiB), counts such as FLOPs and MACs
// with SI suffixes ("239G", "1.195e+03P" past peta, as C's %.4g), seconds
// in us, ms or s (%.4g), utilization as a percentage (%.3g%%); and a
// violated budget as "memory 4.19 GiB > 3 GiB" (the CLI's print_part in
// cli/cli_explain.c: the value in its unit, the limit as the API states it).
//
// C's printf rounds the exact binary value of a double to the nearest
// decimal, ties to even; JavaScript's toFixed breaks exact ties upwards
// (1.125 -> "1.13" where printf("%.2f") gives "1.12"). So the rounding here
// is done on the double's exact decimal expansion with BigInt arithmetic.

// The exact value of a finite double |x| as {m, f}: |x| = m / 10^f.
function exact(x) {
	const a = Math.abs(x);
	if (Number.isInteger(a))
		return { m: BigInt(a), f: 0 };
	// a non-integer is below 2^53 < 1e21, so toFixed gives digits, and 100
	// of them are the exact expansion for every |x| >= 2^-48 (a double
	// there has at most 100 binary, hence decimal, fraction digits)
	const [int, frac] = a.toFixed(100).split('.');
	const digits = frac.replace(/0+$/, '');
	return { m: BigInt(int + digits), f: digits.length };
}

const TEN = 10n;
const pow10 = (n) => TEN ** BigInt(n);

// |x| rounded to d decimals (d may be negative), ties to even: the
// integer q with |x| ~ q / 10^d.
function roundTo(x, d) {
	const { m, f } = exact(x);
	if (f <= d)
		return m * pow10(d - f);
	const div = pow10(f - d);
	let q = m / div;
	const r = m % div, half = div / 2n;
	if (r > half || (r === half && q % 2n === 1n))
		q += 1n;
	return q;
}

// q / 10^d written with d decimals (d >= 0).
function decimals(q, d) {
	const s = q.toString().padStart(d + 1, '0');
	return d > 0 ? `${s.slice(0, s.length - d)}.${s.slice(s.length - d)}` : s;
}

const sign = (x) => (x < 0 || Object.is(x, -0) ? '-' : '');

// printf("%.*f", d, x)
export function cFixed(x, d) {
	return sign(x) + decimals(roundTo(x, d), d);
}

const stripZeros = (s) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);

// printf("%.*g", p, x)
export function cGeneral(x, p) {
	if (x === 0)
		return sign(x) + '0';
	const { m, f } = exact(x);
	let e = m.toString().length - 1 - f; // the exponent before rounding
	let q = roundTo(x, p - 1 - e);
	if (q.toString().length > p) // 9.9995 -> 10.00: one exponent up
		e += 1;
	if (e < -4 || e >= p) {
		const digits = q.toString().slice(0, p);
		const mant = stripZeros(digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits);
		return `${sign(x)}${mant}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
	}
	q = roundTo(x, p - 1 - e);
	return sign(x) + stripZeros(decimals(q, p - 1 - e));
}

const BIN = ['KiB', 'MiB', 'GiB', 'TiB'];

// cli_human_bytes
export function humanBytes(b) {
	let x = Math.abs(b), u = -1;
	while (x >= 1024 && u < 3) {
		x /= 1024;
		u++;
	}
	if (u < 0)
		return `${cFixed(b, 0)} B`;
	return `${b < 0 ? '-' : ''}${cFixed(x, u >= 2 ? 2 : 1)} ${BIN[u]}`;
}

const SUFFIX = ['', 'K', 'M', 'G', 'T', 'P'];

// cli_human_count
export function humanCount(n) {
	let x = Math.abs(n), u = 0;
	while (x >= 1000 && u < 5) {
		x /= 1000;
		u++;
	}
	return `${n < 0 ? '-' : ''}${cGeneral(x, 4)}${SUFFIX[u]}`;
}

// cli_human_seconds
export function humanSeconds(s) {
	if (Math.abs(s) < 1e-3)
		return `${cGeneral(s * 1e6, 4)} us`;
	if (Math.abs(s) < 1)
		return `${cGeneral(s * 1e3, 4)} ms`;
	return `${cGeneral(s, 4)} s`;
}

// cli_human_budget: a budget's value (by the budget's name) in its unit.
export function humanBudget(budget, v) {
	if (budget === 'memory' || budget === 'weight_bytes')
		return humanBytes(v);
	if (budget === 'latency' || budget === 'step_time')
		return humanSeconds(v);
	if (budget === 'min_utilization')
		return `${cGeneral(v * 100, 3)}%`;
	return humanCount(v);
}

// One part of a check answer ({constraint, path, holds, value}) as the CLI
// prints it: a budget as "memory 4.19 GiB > 3 GiB" (value in its unit, the
// comparison as it turned out, the limit as the constraint states it);
// anything else as its constraint text, with its value when it has one.
export function partText(c) {
	const label = c.constraint || '';
	const path = c.path || '';
	let at = label.indexOf(' <= ');
	if (at < 0)
		at = label.indexOf(' >= ');
	if (at >= 0 && typeof c.value === 'number' && path.startsWith('$.budgets.')) {
		const le = label[at + 1] === '<';
		const op = c.holds ? (le ? '<=' : '>=') : (le ? '>' : '<');
		return `${label.slice(0, at)} ${humanBudget(path.slice(10), c.value)} ${op} ${label.slice(at + 4)}`;
	}
	if (typeof c.value === 'number')
		return `${label} (value ${Number.isInteger(c.value) ? c.value : cGeneral(c.value, 6)})`;
	return label;
}
