// state.js - the dashboard's inputs in the URL fragment, so that a reload
// keeps them and a link reproduces the view: "#k=v&k=v" (URLSearchParams)
// of short values (template, device, budgets...), with the texts a user
// pastes (search space, custom model) deflated (CompressionStream
// "deflate-raw") and written in base64url. The texts are kept exactly as
// typed, so the space's key order and layout come back too.
//
// Bound: a fragment longer than MAX_FRAGMENT characters is not written
// with its texts: the space and model are left out (the link keeps the
// other inputs) and encodeState says so (`dropped`), for the page to tell
// the user to share the search_space.json file instead. 32,768 is the
// limit dnnsatd puts on a request URI (docs/api.md), well inside every
// browser's URL limit and short enough for chat and mail to carry.

export const MAX_FRAGMENT = 32768;

// the keys of the fragment holding deflated texts
const TEXTS = ['space', 'model_json'];

function base64url(bytes) {
	let bin = '';
	for (let i = 0; i < bytes.length; i += 0x8000)
		bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
	return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function unbase64url(text) {
	if (!/^[A-Za-z0-9_-]*$/.test(text))
		throw new Error('not base64url');
	const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
	return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

async function through(stream, bytes) {
	const out = new Response(new Blob([bytes]).stream().pipeThrough(stream));
	return new Uint8Array(await out.arrayBuffer());
}

export async function deflateText(text) {
	return base64url(await through(new CompressionStream('deflate-raw'), new TextEncoder().encode(text)));
}

export async function inflateText(text) {
	return new TextDecoder('utf-8', { fatal: true }).decode(
		await through(new DecompressionStream('deflate-raw'), unbase64url(text)));
}

// The fragment (without '#') for `state` ({key: string}; texts under the
// TEXTS keys): {fragment, dropped: [keys left out], length (what it would
// have been)}.
export async function encodeState(state) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(state))
		if (v !== undefined && v !== null && v !== '')
			q.set(k, TEXTS.includes(k) ? await deflateText(v) : String(v));
	const full = q.toString();
	if (full.length <= MAX_FRAGMENT)
		return { fragment: full, dropped: [], length: full.length };
	const dropped = TEXTS.filter((k) => q.has(k));
	for (const k of dropped)
		q.delete(k);
	return { fragment: q.toString(), dropped, length: full.length };
}

// The state a fragment holds: {state: {key: string}, errors: ['key: why']}
// (a text that cannot be read is left out and named in errors).
export async function decodeState(fragment) {
	const q = new URLSearchParams(fragment.replace(/^#/, ''));
	const state = {}, errors = [];
	for (const [k, v] of q) {
		if (!TEXTS.includes(k)) {
			state[k] = v;
			continue;
		}
		try {
			state[k] = await inflateText(v);
		} catch (e) {
			errors.push(`${k}: not a deflated base64url text (${e.message})`);
		}
	}
	return { state, errors };
}
