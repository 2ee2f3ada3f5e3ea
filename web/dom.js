// dom.js - tiny helpers to build and fill HTML and SVG elements; the views
// use them instead of a framework.

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(el, attrs, children) {
	for (const [k, v] of Object.entries(attrs || {})) {
		if (v === undefined || v === null || v === false)
			continue;
		if (k.startsWith('on') && typeof v === 'function')
			el.addEventListener(k.slice(2), v);
		else if (k === 'text')
			el.textContent = v;
		else
			el.setAttribute(k, v === true ? '' : String(v));
	}
	for (const c of children.flat(Infinity)) {
		if (c === undefined || c === null || c === false)
			continue;
		el.append(c instanceof Node ? c : String(c));
	}
	return el;
}

// h('p', {class: 'hint'}, 'text', child): an HTML element.
export const h = (tag, attrs, ...children) => fill(document.createElement(tag), attrs, children);

// s('rect', {x: 0, ...}): an SVG element.
export const s = (tag, attrs, ...children) => fill(document.createElementNS(SVG_NS, tag), attrs, children);

export const $ = (id) => document.getElementById(id);

// Replaces el's children (nulls and falses skipped, arrays flattened).
export function put(el, ...children) {
	el.replaceChildren();
	return fill(el, {}, children);
}
