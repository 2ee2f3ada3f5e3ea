// format.js - how the dashboard writes numbers: counts (decimal strings that
// may exceed 2^53), ratios, bytes, FLOPs and durations, and the log-scale
// mapping of the FLOPs and latency sliders.

const SUPERSCRIPT = '⁰¹²³⁴⁵⁶⁷⁸⁹';

// A count given as a decimal string: grouped digits up to 15 digits,
// else "1.27 × 10³⁰" (the exact value goes in a title).
export function count(str) {
	const digits = String(str ?? '');
	if (!/^\d+$/.test(digits))
		return digits || '–';
	if (digits.length <= 15)
		return BigInt(digits).toLocaleString('en-US');
	const exp = [...String(digits.length - 1)].map((d) => SUPERSCRIPT[d]).join('');
	return `${digits[0]}.${digits.slice(1, 3)} × 10${exp}`;
}

export function percent(ratio) {
	if (!(ratio > 0))
		return '0%';
	const p = ratio * 100;
	if (p >= 99.95 && ratio < 1)
		return '>99.9%';
	if (p >= 1)
		return `${p.toFixed(1)}%`;
	return p >= 0.01 ? `${p.toPrecision(2)}%` : '<0.01%';
}

// A value of a search space: strings bare, the rest as JSON.
export const value = (v) => (typeof v === 'string' ? v : JSON.stringify(v));

// Three significant digits, trailing zeros dropped.
export const sig = (x) => String(Number(x.toPrecision(3)));

const BIN = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function bytes(n) {
	let i = 0;
	while (Math.abs(n) >= 1024 && i < BIN.length - 1) {
		n /= 1024;
		i++;
	}
	return `${i === 0 ? n : sig(n)} ${BIN[i]}`;
}

const SI = ['', 'k', 'M', 'G', 'T', 'P', 'E'];

// 2.5e10 -> "25 G" (unit appended by the caller).
export function si(n, unit = '') {
	let i = 0;
	while (Math.abs(n) >= 1000 && i < SI.length - 1) {
		n /= 1000;
		i++;
	}
	return `${sig(n)} ${SI[i]}${unit}`.trim();
}

export function seconds(t) {
	if (t >= 1)
		return `${sig(t)} s`;
	if (t >= 1e-3)
		return `${sig(t * 1e3)} ms`;
	return `${sig(t * 1e6)} µs`;
}

// A slider position 0..steps over [10^lo, 10^hi], log scale.
export const logValue = (pos, lo, hi, steps) => Number((10 ** (lo + (hi - lo) * pos / steps)).toPrecision(3));
export const logPos = (value, lo, hi, steps) =>
	Math.min(steps, Math.max(0, Math.round((Math.log10(value) - lo) / (hi - lo) * steps)));
