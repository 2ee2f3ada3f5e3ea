// heatmap.js - draws the answer of GET /v1/reductions/{id}/heatmap as an
// SVG grid: one cell per pair of values, filled when some feasible
// configuration has the pair, hatched when none does; with its legend and a
// text summary for screen readers.

import { h, s } from './dom.js';
import { value as valueText } from './format.js';

const CELL_W = 36, CELL_H = 26, CHAR_W = 7.2;

// Every k-th label when there are too many to read.
const every = (n, room) => Math.max(1, Math.ceil(n / room));

export function renderHeatmap(el, hm) {
	const xs = hm.x_values.map(valueText), ys = hm.y_values.map(valueText);
	const nx = xs.length, ny = ys.length;
	const rotate = nx > 8 || xs.some((l) => l.length > 4);
	const yLabelW = Math.max(...ys.map((l) => l.length)) * CHAR_W + 10;
	const xLabelH = rotate ? Math.min(90, Math.max(...xs.map((l) => l.length)) * CHAR_W * 0.75 + 14) : 18;
	const left = 22 + yLabelW, top = 6, bottom = xLabelH + 24;
	const width = left + nx * CELL_W + 8, height = top + ny * CELL_H + bottom;
	const kx = every(nx, 24), ky = every(ny, 24);
	let fits = 0;

	const cells = [];
	// y_values[0] at the bottom: values grow upwards, as on a chart
	for (let j = 0; j < ny; j++)
		for (let i = 0; i < nx; i++) {
			const ok = hm.feasible[j][i];
			fits += ok ? 1 : 0;
			cells.push(s('rect', {
				x: left + i * CELL_W + 1, y: top + (ny - 1 - j) * CELL_H + 1, width: CELL_W - 2, height: CELL_H - 2,
				rx: 3, class: ok ? 'hm-yes' : 'hm-no',
			}, s('title', {}, `${hm.x} ${xs[i]}, ${hm.y} ${ys[j]}: ${ok ? 'fits' : 'does not fit'}`)));
		}
	const xLabels = xs.map((l, i) => (i % kx ? null : s('text', {
		x: left + (i + 0.5) * CELL_W, y: top + ny * CELL_H + 14, class: 'hm-label',
		'text-anchor': rotate ? 'end' : 'middle',
		transform: rotate ? `rotate(-45 ${left + (i + 0.5) * CELL_W} ${top + ny * CELL_H + 10})` : null,
	}, l)));
	const yLabels = ys.map((l, j) => (j % ky ? null : s('text', {
		x: left - 6, y: top + (ny - 1 - j + 0.5) * CELL_H + 4, class: 'hm-label', 'text-anchor': 'end',
	}, l)));
	const summary = `${fits} of ${nx * ny} pairs of ${hm.x} and ${hm.y} values have a configuration that fits`;
	const svg = s('svg', {
		viewBox: `0 0 ${width} ${height}`, width, role: 'img', 'aria-label': `Heat map: ${summary}`,
		class: 'hm',
	},
	s('defs', {}, s('pattern', { id: 'hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' },
		s('rect', { width: 6, height: 6, class: 'hm-no-bg' }),
		s('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'hm-no-line' }))),
	cells, xLabels, yLabels,
	s('text', { x: left + nx * CELL_W / 2, y: height - 4, 'text-anchor': 'middle', class: 'hm-axis' }, hm.x),
	s('text', {
		x: 12, y: top + ny * CELL_H / 2, 'text-anchor': 'middle', class: 'hm-axis',
		transform: `rotate(-90 12 ${top + ny * CELL_H / 2})`,
	}, hm.y));

	el.replaceChildren(
		h('div', { class: 'hm-wrap' }, svg),
		h('ul', { class: 'legend' },
			h('li', {}, h('span', { class: 'swatch hm-yes' }), 'some configuration with this pair fits'),
			h('li', {}, h('span', { class: 'swatch hm-no' }), 'no configuration with this pair fits')),
		h('p', { class: 'hint' }, `${summary}.`));
}
